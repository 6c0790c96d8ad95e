"""Metrics of the CRD check, registered on the reconciler's registry. Every replica exports them: the CRD
watch runs on each, so a standby reports the same verdicts as the leader."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge


class CrdCheckMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.outdated = Gauge(
            "modelbooster_crd_outdated",
            "1 when the served CRD is not the one this version generates (apply this release's CRDs), else 0.",
            ["crd"],
            registry=registry,
        )
