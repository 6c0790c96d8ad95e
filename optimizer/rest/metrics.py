"""The optimizer server's own series (`inferno_optimizer_*`), on a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class OptimizerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Counter(
            "inferno_optimizer_http_requests",
            "HTTP requests by route and status code",
            ["method", "route", "code"],
            registry=registry,
        )
        self.runs = Counter("inferno_optimizer_runs", "optimisation runs by result", ["result"], registry=registry)
        self.run_seconds = Histogram(
            "inferno_optimizer_run_duration_seconds",
            "time to size and solve one system",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=registry,
        )
        self.servers = Gauge(
            "inferno_optimizer_last_run_servers", "servers in the last run", ["state"], registry=registry
        )
        self.cost = Gauge("inferno_optimizer_last_run_cost", "total cost of the last run, cents/h", registry=registry)
