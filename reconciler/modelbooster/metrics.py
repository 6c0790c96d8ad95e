"""The ModelBooster controller's own series (the controller-runtime ones are the runtime's, runtime/metrics.py)."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Histogram

from reconciler.runtime.metrics import Metrics

# Creation to Initialized, in whole seconds (both timestamps have second resolution): 0 on a quiet cluster
# (Initialized within the second of creation), up to an hour for an object that was invalid or blocked for a
# while. Buckets below 1 s keep the same-second ones apart from the next-second ones, so quantiles below 1 s
# are not an artefact of a first bucket at 1 s.
INITIALIZED_BUCKETS: Final = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)


class ModelBoosterMetrics:
    def __init__(self, metrics: Metrics) -> None:
        self.process = metrics
        r = metrics.registry
        self.children_applied = Counter(
            "modelbooster_children_applied_total",
            "Writes of ModelBooster children, by child kind and action (created, updated, replaced, adopted, deleted)",
            ["kind", "action"],
            registry=r,
        )
        self.time_to_initialized = Histogram(
            "modelbooster_time_to_initialized_seconds",
            "Time from a ModelBooster's creation to the status write that first set Initialized True",
            buckets=INITIALIZED_BUCKETS,
            registry=r,
        )
        self.not_served_fields = Counter(
            "modelbooster_fields_not_served_total",
            "Fields of a child that the served CRD would prune, reported once per ModelBooster and field",
            ["kind", "field"],
            registry=r,
        )
