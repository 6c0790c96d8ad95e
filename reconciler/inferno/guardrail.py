"""The saturation guardrail around the optimiser's decision: when the model is wrong it under-provisions with
confidence, so what the replicas report overrules it, towards more replicas only (a saturated target grows, a
scale-down stops short of saturation); the stabiliser follows (docs/design/inferno.md §14). Pure and
deterministic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from reconciler.inferno.saturation import Assessment
from reconciler.inferno.stabilizer import Stabilizer

DEFAULT_HEADROOM: Final = 0.9
MAX_STEP_FACTOR: Final = 2  # at most double the replicas per period

Override = Literal["Saturated", "SaturatedAtMaximum", "ScaleDownWouldSaturate"]
OVERRIDES: Final[tuple[Override, ...]] = ("Saturated", "SaturatedAtMaximum", "ScaleDownWouldSaturate")


@dataclass(frozen=True)
class Guarded:
    replicas: int
    override: Override | None  # None: the optimiser's decision stands
    message: str


def guard(
    *,
    decided: int,
    current: int,
    minimum: int,
    maximum: int,
    assessment: Assessment | None,
    headroom: float = DEFAULT_HEADROOM,
) -> Guarded:
    """The replicas to set given the optimiser's `decided` (already within [minimum, maximum]) and the
    target's `current` replicas, which `assessment` observed."""
    if not 0 < headroom <= 1:
        raise ValueError(f"headroom must be in (0, 1], got {headroom}")
    if assessment is None:
        return Guarded(decided, None, "saturation signals unavailable; the optimiser's decision stands")
    why = assessment.explain()
    # The signals come from the pods that run; replicas asked for and still starting count as capacity coming.
    if assessment.pressure_at(current) >= 1.0:
        if current >= maximum:
            return Guarded(
                max(decided, min(current, maximum)),
                "SaturatedAtMaximum",
                f"saturated ({why}) and already at the maximum of {maximum} replicas",
            )
        step_limit = max(current * MAX_STEP_FACTOR, current + 1)
        wanted = max(current + 1, min(assessment.fewest_replicas_below(headroom), step_limit))
        wanted = min(wanted, maximum)
        if decided >= wanted:
            return Guarded(decided, None, f"saturated ({why}); the optimiser already adds enough")
        return Guarded(
            wanted, "Saturated", f"saturated ({why}): {wanted} replicas instead of the optimiser's {decided}"
        )
    if decided < current:
        projected = assessment.pressure_at(decided)
        if projected > headroom:
            floor = min(max(assessment.fewest_replicas_below(headroom), decided), current)
            if floor > decided:
                return Guarded(
                    floor,
                    "ScaleDownWouldSaturate",
                    f"scaling down to {decided} would put the pressure at {projected:.2f} ({why}); keeping {floor}",
                )
    return Guarded(decided, None, f"not saturated ({why})")


def control(
    *,
    decided: int,
    current: int,
    minimum: int,
    maximum: int,
    assessment: Assessment | None,
    stabilizer: Stabilizer,
    now: float,
    headroom: float = DEFAULT_HEADROOM,
) -> tuple[int, Guarded]:
    """The whole law for one target and period: the decision clamped to the bounds, guarded, then stabilised
    (a scale-down only to the highest guarded decision of the window). Returns the replicas to set and what
    the guardrail did."""
    clamped = min(max(decided, minimum), maximum)
    guarded = guard(
        decided=clamped, current=current, minimum=minimum, maximum=maximum, assessment=assessment, headroom=headroom
    )
    return stabilizer.recommend(now=now, desired=guarded.replicas, current=current), guarded
