"""The operator's limits on Scale actuation (reconciler/inferno/ceilings.py, docs/design/inferno.md §18): what no
Server or ModelBooster can pass, each named in the bounds' source when it applied."""

from __future__ import annotations

import pytest

from reconciler.inferno.ceilings import Ceilings, CeilingsError
from reconciler.inferno.targets import Bounds


def test_bounds_are_cut_to_the_ceiling_and_raised_to_the_floor() -> None:
    ceilings = Ceilings(max_replicas=100, min_replicas=1)
    limited = ceilings.limit(Bounds(0, 50_000, "Server"))
    assert limited == Bounds(1, 100, "Server, operator ceiling 100, operator floor 1")
    assert ceilings.limit(Bounds(2, 6, "backend a of ModelBooster m")) == Bounds(2, 6, "backend a of ModelBooster m")
    # A floor above the ceiling of the target itself: the target's maximum wins (never above what it allows).
    assert Ceilings(max_replicas=10, min_replicas=5).limit(Bounds(1, 3, "Server")) == Bounds(
        3, 3, "Server, operator floor 5"
    )


@pytest.mark.parametrize(
    ("current", "wanted", "expected"),
    [(3, 50_000, 7), (7, 50_000, 14), (0, 9, 4), (40, 0, 0), (40, 30, 30), (3, 0, 0), (10, 1, 1), (100, 1, 1)],
)
def test_one_decision_moves_at_most_the_step(current: int, wanted: int, expected: int) -> None:
    assert Ceilings(max_step=4, max_step_percent=100).step(current=current, wanted=wanted) == expected


def test_a_smaller_step_percent_slows_big_targets_only() -> None:
    ceilings = Ceilings(max_step=2, max_step_percent=10)
    assert ceilings.step(current=100, wanted=200) == 110
    assert ceilings.step(current=5, wanted=50) == 7


def test_the_shortest_window_is_the_operators() -> None:
    assert Ceilings(min_stabilization=60).window(0) == 60
    assert Ceilings(min_stabilization=60).window(300) == 300


@pytest.mark.parametrize(
    ("limits", "flag"),
    [
        ({"max_replicas": 0}, "--inferno-max-replicas"),
        ({"min_replicas": 5, "max_replicas": 4}, "--inferno-min-replicas"),
        ({"max_step": 0}, "--inferno-max-scale-step"),
        ({"max_step_percent": -1}, "--inferno-max-scale-step-percent"),
        ({"min_stabilization": -1.0}, "--inferno-min-stabilization"),
    ],
)
def test_unusable_limits_name_their_flag(limits: dict[str, float], flag: str) -> None:
    with pytest.raises(CeilingsError, match=flag):
        Ceilings(**limits)  # type: ignore[arg-type]
