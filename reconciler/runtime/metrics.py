"""Prometheus metrics of the reconciler process, named exactly like controller-runtime's.

Users' existing controller-runtime dashboards (reconcile rate, errors, latency, queue depth, leader) work
unchanged. Every `Metrics` owns its own registry so that several managers can live in one test process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")

# controller-runtime's reconcile-time buckets (pkg/internal/controller/metrics).
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0,
    40.0, 50.0, 60.0,
)  # fmt: skip
# workqueue histograms: ExponentialBuckets(1e-8, 10, 12).
WORKQUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(12))


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.terminal_errors = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )
        self.queue_depth = Gauge("workqueue_depth", "Current depth of workqueue", ["name", "controller"], registry=r)
        self.queue_adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", ["name", "controller"], registry=r
        )
        self.queue_retries = Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", ["name", "controller"],
            registry=r,
        )  # fmt: skip
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name", "controller"],
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            ["name", "controller"],
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        )
        self.leader_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 master",
            ["name"],
            registry=r,
        )
        self.rest_requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host",
            ["code", "method", "host"],
            registry=r,
        )
        self.event_post_failures = Counter(
            "modelbooster_event_post_failures_total",
            "Event posts that failed (best effort: logged once per run of failures), by reason "
            "(unavailable, namespace_terminating, refused)",
            ["reason"],
            registry=r,
        )
        self.watch_restarts = Counter(
            "modelbooster_watch_restarts_total",
            "Watch streams re-opened, by kind and why (timeout, closed, error, gone)",
            ["kind", "reason"],
            registry=r,
        )

    def init_controller(self, controller: str, workers: int) -> None:
        """Pre-initialise the per-controller series to 0, as controller-runtime does."""
        for result in RECONCILE_RESULTS:
            self.reconcile_total.labels(controller=controller, result=result)
        self.reconcile_errors.labels(controller=controller)
        self.terminal_errors.labels(controller=controller)
        self.max_concurrent.labels(controller=controller).set(workers)
        self.active_workers.labels(controller=controller).set(0)

    def add_condition_gauge(
        self, *, name: str, documentation: str, counts: Callable[[], Mapping[str, int]], label: str = "condition"
    ) -> None:
        """Register a gauge computed at scrape time (e.g. boosters per true condition, from a cache)."""
        self.registry.register(_ComputedGauge(name=name, documentation=documentation, counts=counts, label=label))


class _ComputedGauge(Collector):
    def __init__(self, *, name: str, documentation: str, counts: Callable[[], Mapping[str, int]], label: str) -> None:
        self._name = name
        self._documentation = documentation
        self._counts = counts
        self._label = label

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(self._name, self._documentation, labels=[self._label])
        for value, count in sorted(self._counts().items()):
            family.add_metric([value], count)
        yield family

    def describe(self) -> Iterable[Metric]:
        yield GaugeMetricFamily(self._name, self._documentation, labels=[self._label])
