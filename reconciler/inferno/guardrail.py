"""The saturation guardrail around the optimiser's decision (docs/design/inferno.md §14).

The optimiser sizes from a model; when the model is wrong (a profile measured on other hardware, a new vLLM,
another prompt mix) it under-provisions with confidence. The guardrail overrules it from what the replicas
report (reconciler.inferno.saturation), in two ways only, both towards more replicas:

- **saturated** (pressure >= 1) → at least one replica more than now, and as many as bring the projected
  pressure down to the headroom (default 0.9), but never more than double per period (a waiting queue is a
  symptom that shrinks faster than linearly once capacity is added; HPA's default scale-up policy is the same
  100 %); then the bounds. Already at the maximum: reported, nothing more can be done;
- **a scale-down** the optimiser wants is made only down to the fewest replicas whose projected pressure stays
  at or under the headroom: never into saturation, and never so close to it that the next period scales up
  again (the gap between 0.9 and 1 is the hysteresis that keeps a noisy load from flapping).

Otherwise the decision stands. Missing signals: the decision stands, and the caller says the guard is blind.
The result then goes through the scale-down stabiliser like any decision, so a guardrail's scale-up is also
held for the stabilisation window. Pure and deterministic.
"""

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
