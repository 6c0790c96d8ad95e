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

    def forget_optimizer(self, namespace: str, name: str) -> None:
        """Drop the series of a deleted Optimizer, so its last cost does not linger."""
        with suppress(KeyError):  # older prometheus-client raises when it never ran
            self.allocation_cost.remove(namespace, name)

    def count_remote(self, method: str, endpoint: str, code: str) -> None:
        self.remote_requests.labels(method, endpoint, code).inc()
