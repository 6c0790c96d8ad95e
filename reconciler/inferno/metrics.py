"""Prometheus metrics of the Inferno controller, registered on the reconciler process's registry.

Next to controller-runtime's per-controller series (controller="inferno"), which count reconciles, these
count what users ask about: optimisation runs and their outcome, how long a run takes, what was written,
and how a remote optimizer answers.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Final, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

RunResult = Literal["success", "invalid", "error"]
# reconciler.inferno.guardrail.OVERRIDES, spelled here so the metrics need no control law.
OVERRIDE_REASONS: Final = ("Saturated", "SaturatedAtMaximum", "ScaleDownWouldSaturate")
RUN_RESULTS: Final[tuple[RunResult, ...]] = ("success", "invalid", "error")

# From a handful of servers (milliseconds) to thousands (tens of seconds, or a remote MILP's 60 s limit).
DURATION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class InfernoMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.optimizations = Counter(
            "inferno_optimizations",
            "Optimisation runs by result: success, invalid (the namespace's objects do not form a valid "
            "system), error (optimizer unreachable or failing, or writing the result failed)",
            ["result"],
            registry=registry,
        )
        self.duration = Histogram(
            "inferno_optimization_duration_seconds",
            "Time of one successful run: gathering the objects, optimising, writing desiredAlloc",
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.desired_writes = Counter(
            "inferno_desired_alloc_writes",
            "Servers whose spec.desiredAlloc was written because the optimizer's answer changed",
            registry=registry,
        )
        self.remote_requests = Counter(
            "inferno_remote_requests",
            "Requests to a remote optimizer by method, endpoint and HTTP status (error: no answer)",
            ["method", "endpoint", "code"],
            registry=registry,
        )
        # `optimizer_namespace`, not `namespace`: Prometheus sets `namespace` to the scraped pod's own.
        self.allocation_cost = Gauge(
            "inferno_allocation_cost",
            "Total cost of the allocation of the last successful run, per Optimizer (cents per hour)",
            ["optimizer_namespace", "optimizer"],
            registry=registry,
        )
        for result in RUN_RESULTS:
            self.optimizations.labels(result)
        # Per Server (docs/inferno.md, "Closing the loop"). `namespace` is the Server's; a scrape that sets
        # its own `namespace` (the chart's ServiceMonitors do) keeps ours as `exported_namespace`.
        self.desired_replicas = Gauge(
            "inferno_desired_replicas",
            "Replicas the last run decided for each Server (desiredAlloc.numReplicas), with its target; "
            "what KEDA or an HPA acts on",
            ["namespace", "server", "target_kind", "target_name", "accelerator"],
            registry=registry,
        )
        self.current_replicas = Gauge(
            "inferno_current_replicas",
            "Replicas a targeted Server's target reported at the last run (its scale status)",
            ["namespace", "server", "target_kind", "target_name"],
            registry=registry,
        )
        self.arrival_rate = Gauge(
            "inferno_load_arrival_rate",
            "Arrival rate each Server was sized for at the last run (requests per minute)",
            ["namespace", "server"],
            registry=registry,
        )
        self.avg_length = Gauge(
            "inferno_load_avg_length",
            "Average generated tokens per request each Server was sized for at the last run",
            ["namespace", "server"],
            registry=registry,
        )
        self.predicted_itl = Gauge(
            "inferno_predicted_itl_seconds",
            "Mean inter-token latency the optimiser predicts for each Server's decision",
            ["namespace", "server"],
            registry=registry,
        )
        self.unallocated = Gauge(
            "inferno_server_unallocated",
            "1 when the last run could not place the Server (no accelerator meets its SLOs, or no room)",
            ["namespace", "server"],
            registry=registry,
        )
        self.load_stale = Gauge(
            "inferno_load_stale",
            "1 when the last run could not measure a targeted Server's load and kept its last one",
            ["namespace", "server"],
            registry=registry,
        )
        self.load_failures = Counter(
            "inferno_load_measurement_failures",
            "Load measurements of targeted Servers that gave no number, by reason (unreachable, timeout, "
            "error, no_data, not_a_number, bad_response, target)",
            ["reason"],
            registry=registry,
        )
        self.scale_blocked = Gauge(
            "inferno_scale_blocked",
            "1 when Scale actuation left a Server's target alone at the last run, by reason",
            ["namespace", "server", "reason"],
            registry=registry,
        )
        self.scale_changes = Counter(
            "inferno_scale_changes",
            "Changes of a target's replicas made by Scale actuation, by direction",
            ["direction"],
            registry=registry,
        )
        for direction in ("up", "down"):
            self.scale_changes.labels(direction)
        # The guardrail, the estimator (docs/design/inferno.md §14, §15).
        self.saturation_overrides = Counter(
            "inferno_saturation_overrides",
            "Periods in which the saturation guardrail overruled the optimiser's replicas for a Server, by reason "
            "(Saturated, SaturatedAtMaximum, ScaleDownWouldSaturate)",
            ["reason"],
            registry=registry,
        )
        for reason in OVERRIDE_REASONS:
            self.saturation_overrides.labels(reason)
        self.saturation_pressure = Gauge(
            "inferno_saturation_pressure",
            "A targeted Server's saturation pressure at the last run: the larger of KV-cache usage and waiting "
            "requests per replica over their thresholds (1 = saturated)",
            ["namespace", "server"],
            registry=registry,
        )
        self.profile_drift = Gauge(
            "inferno_profile_drift",
            "How far the measured ITL of a Server is from its typed profile's prediction at the measured batch, "
            "(measured - predicted) / predicted",
            ["namespace", "server"],
            registry=registry,
        )
        self._server_series: dict[str, set[tuple[Gauge, tuple[str, ...]]]] = {}

    def publish_servers(self, namespace: str, series: set[tuple[Gauge, tuple[str, ...]]]) -> None:
        """Replace the per-Server series of one namespace by those of its last run (a Server deleted, retargeted
        or now allocated leaves no old series behind). The values were set by the caller."""
        for gauge, labels in self._server_series.get(namespace, set()) - series:
            with suppress(KeyError):
                gauge.remove(*labels)
        self._server_series[namespace] = series

    def withdraw_servers(self) -> None:
        """Drop every per-Server series (leadership lost)."""
        for namespace in list(self._server_series):
            self.publish_servers(namespace, set())

    def forget_optimizer(self, namespace: str, name: str) -> None:
        """Drop the series of a deleted Optimizer, so its last cost does not linger."""
        with suppress(KeyError):  # older prometheus-client raises when it never ran
            self.allocation_cost.remove(namespace, name)

    def count_remote(self, method: str, endpoint: str, code: str) -> None:
        self.remote_requests.labels(method, endpoint, code).inc()
