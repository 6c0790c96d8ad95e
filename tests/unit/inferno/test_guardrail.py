"""The saturation signals and the guardrail's control law (docs/design/inferno.md §14)."""

from __future__ import annotations

import math

import pytest

from reconciler.inferno.guardrail import control, guard
from reconciler.inferno.saturation import Assessment, Signals, Thresholds, assess
from reconciler.inferno.stabilizer import Stabilizer

THRESHOLDS = Thresholds()


def at(kv: float, waiting: float, replicas: int) -> Assessment:
    found = assess(Signals(kv_cache=kv, waiting=waiting, running=None), THRESHOLDS, replicas=replicas)
    assert found is not None
    return found


def test_pressure_is_the_larger_ratio_to_its_threshold() -> None:
    a = at(0.4, 0.0, 2)
    assert a.pressure == pytest.approx(0.5)
    assert not a.saturated
    b = at(0.4, 30.0, 2)  # 15 waiting per replica against 5
    assert b.pressure == pytest.approx(3.0)
    assert b.saturated
    assert at(0.8, 0.0, 3).saturated  # exactly at the KV threshold counts


def test_projection_spreads_the_same_work_over_other_replica_counts() -> None:
    a = at(0.72, 0.0, 4)  # pressure 0.9
    assert a.pressure_at(2) == pytest.approx(1.8)
    assert a.pressure_at(8) == pytest.approx(0.45)
    assert a.fewest_replicas_below(0.9) == 4
    assert a.fewest_replicas_below(0.5) == 8
    assert a.pressure_at(0) == math.inf
    assert at(0.0, 0.0, 3).fewest_replicas_below(0.9) == 0


def test_missing_or_odd_signals() -> None:
    assert assess(Signals(None, 3.0, 1.0), THRESHOLDS, replicas=2) is None
    assert assess(Signals(0.5, None, 1.0), THRESHOLDS, replicas=2) is None
    odd = assess(Signals(1.7, -4.0, None), THRESHOLDS, replicas=2)  # clipped: KV at most full, no negative queue
    assert odd is not None
    assert odd.kv_ratio == pytest.approx(1.25)
    assert odd.waiting_ratio == 0


@pytest.mark.parametrize(("kv", "waiting"), [(0.0, 0.0), (1.5, 1.0)])
def test_thresholds_are_checked(kv: float, waiting: float) -> None:
    with pytest.raises(ValueError, match="threshold must be"):
        Thresholds(kv_cache=kv, waiting_per_replica=waiting)


def test_saturated_adds_at_least_one_replica_whatever_the_optimiser_says() -> None:
    result = guard(decided=2, current=2, minimum=1, maximum=10, assessment=at(0.85, 0.0, 2))
    assert result.override == "Saturated"
    assert result.replicas >= 3
    assert "instead of the optimiser's 2" in result.message


def test_saturated_adds_enough_for_the_headroom_but_at_most_doubles() -> None:
    # 12.5 waiting per replica: pressure 2.5 -> 2 * 2.5 / 0.9 = 5.6 replicas, but at most twice the 2 now.
    result = guard(decided=1, current=2, minimum=1, maximum=10, assessment=at(0.5, 25.0, 2))
    assert (result.replicas, result.override) == (4, "Saturated")
    mild = guard(decided=1, current=4, minimum=1, maximum=10, assessment=at(0.5, 21.0, 4))  # pressure 1.05
    assert (mild.replicas, mild.override) == (5, "Saturated")


def test_saturated_within_the_bounds_and_at_the_maximum() -> None:
    capped = guard(decided=3, current=3, minimum=1, maximum=4, assessment=at(0.5, 60.0, 3))
    assert (capped.replicas, capped.override) == (4, "Saturated")
    stuck = guard(decided=2, current=4, minimum=1, maximum=4, assessment=at(0.95, 0.0, 4))
    assert (stuck.replicas, stuck.override) == (4, "SaturatedAtMaximum")
    assert "maximum of 4" in stuck.message


def test_saturated_but_the_optimiser_already_adds_more_is_no_override() -> None:
    result = guard(decided=6, current=2, minimum=1, maximum=10, assessment=at(0.85, 0.0, 2))
    assert (result.replicas, result.override) == (6, None)


def test_scale_down_into_saturation_is_not_made() -> None:
    # pressure 0.75 at 4 replicas: 2 replicas would be 1.5, 3 would be 1.0 (> 0.9 headroom): stay at 4.
    result = guard(decided=2, current=4, minimum=1, maximum=10, assessment=at(0.6, 0.0, 4))
    assert (result.replicas, result.override) == (4, "ScaleDownWouldSaturate")
    # pressure 0.5 at 6: down to 4 is 0.75 (fine), to 3 would be 1.0: keep 4 instead of the optimiser's 3.
    partial = guard(decided=3, current=6, minimum=1, maximum=10, assessment=at(0.4, 0.0, 6))
    assert (partial.replicas, partial.override) == (4, "ScaleDownWouldSaturate")
    assert "keeping 4" in partial.message


def test_a_safe_scale_down_and_a_calm_decision_stand() -> None:
    down = guard(decided=2, current=4, minimum=1, maximum=10, assessment=at(0.2, 0.0, 4))
    assert (down.replicas, down.override) == (2, None)
    same = guard(decided=3, current=3, minimum=1, maximum=10, assessment=at(0.5, 1.0, 3))
    assert (same.replicas, same.override) == (3, None)


def test_no_signals_no_override() -> None:
    result = guard(decided=1, current=5, minimum=1, maximum=10, assessment=None)
    assert (result.replicas, result.override) == (1, None)
    assert "unavailable" in result.message


def test_headroom_is_checked() -> None:
    with pytest.raises(ValueError, match="headroom"):
        guard(decided=1, current=1, minimum=1, maximum=2, assessment=None, headroom=0)


def test_replicas_still_starting_count_as_capacity_coming() -> None:
    # 2 pods report (pressure 1.06), 3 replicas are asked for: spread over 3 the pressure is 0.71, no override.
    starting = guard(decided=3, current=3, minimum=1, maximum=10, assessment=at(0.85, 0.0, 2))
    assert (starting.replicas, starting.override) == (3, None)


def test_control_clamps_guards_then_stabilises() -> None:
    stabilizer = Stabilizer(window=300.0)
    replicas, guarded = control(
        decided=1, current=2, minimum=1, maximum=10, assessment=at(0.85, 0.0, 2), stabilizer=stabilizer, now=0.0
    )
    assert (replicas, guarded.override) == (3, "Saturated")
    # The next period is calm and the optimiser still says 1: the guardrail's 3 holds for the window.
    replicas, guarded = control(
        decided=1, current=3, minimum=1, maximum=10, assessment=at(0.2, 0.0, 3), stabilizer=stabilizer, now=60.0
    )
    assert (replicas, guarded.override) == (3, None)
    replicas, _ = control(
        decided=1, current=3, minimum=1, maximum=10, assessment=at(0.2, 0.0, 3), stabilizer=stabilizer, now=400.0
    )
    assert replicas == 1
    above, _ = control(decided=50, current=3, minimum=1, maximum=10, assessment=None, stabilizer=stabilizer, now=401.0)
    assert above == 10
