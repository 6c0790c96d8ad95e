"""The closed loop's second step, between measuring and the optimiser (docs/design/inferno.md §14-§16): learn
from this period's signals, size the run's system with what was learnt and the trends, and carry what the later
steps need (each Server's status pieces, the classes' saturation thresholds) as one value, not in fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from optimizer.system import Allocation
from reconciler.inferno.correction import Observed
from reconciler.inferno.measure import Measurement
from reconciler.inferno.saturation import Assessment, Thresholds, assess, thresholds_for
from shared.api import inferno as api


@dataclass(frozen=True)
class Adjusted:
    """What deciding learnt for one run of a namespace."""

    # Server metadata.name -> what correcting puts in its status (`performance`, `trend`).
    pieces: Mapping[str, Mapping[str, Any]]
    # ServiceClass spec.name -> its saturation thresholds.
    class_saturation: Mapping[str, api.SaturationSpec]

    def status_of(self, name: str) -> dict[str, Any]:
        return dict(self.pieces.get(name, {}))

    def thresholds(self, spec: Mapping[str, Any]) -> Thresholds | None:
        own = spec.get("saturation")
        try:
            server = api.SaturationSpec.model_validate(own) if isinstance(own, dict) else None
        except ValidationError:
            server = None  # the run's validation reports it
        return thresholds_for(server, self.class_saturation.get(str(spec.get("class") or "")))

    def assess(self, spec: Mapping[str, Any], measurement: Measurement) -> Assessment | None:
        """This period's saturation of a Server's pods against its thresholds; None when blind or turned off."""
        if measurement.signals is None or measurement.scale is None:
            return None
        thresholds = self.thresholds(spec)
        if thresholds is None:
            return None
        return assess(measurement.signals.saturation, thresholds, replicas=measurement.scale.observed)


@dataclass(frozen=True)
class ServerDecision:
    """One targeted Server's part of a run, as acting and reporting take it."""

    obj: dict[str, Any]  # the Server as cached
    allocation: Allocation | None  # the optimiser's answer; None: not placed
    measurement: Measurement


def observed(measurements: Mapping[str, Measurement]) -> dict[str, Observed]:
    """What each measured Server's pods said this period, as the corrections learn from it."""
    return {
        name: Observed(
            signals=measurement.signals,
            replicas=measurement.scale.observed if measurement.scale is not None else 0,
            load_ok=measurement.load_ok,
        )
        for name, measurement in measurements.items()
    }
