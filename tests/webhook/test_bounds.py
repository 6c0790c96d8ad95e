"""The pieces that bound what one request may cost: the body budget, the shape walk, the allocator."""

from __future__ import annotations

import json

import pytest

from webhook.budget import SMALL_BODY, BodyBudget
from webhook.memory import Allocator, Trimmer
from webhook.shape import MAX_OBJECT_DEPTH, MAX_OBJECT_VALUES, excess, surely_within_bounds


def test_a_reservation_grows_and_releases_once() -> None:
    budget = BodyBudget(1000)
    first = budget.reservation()
    assert first.grow(10)
    assert first.grow(5)  # never shrinks
    assert first.held == 10
    assert budget.used == 10
    assert first.grow(30)
    assert budget.used == 30
    first.release()
    first.release()
    assert budget.used == 0
    assert budget.take_released() == 30
    assert budget.take_released() == 0


def test_large_bodies_leave_a_quarter_of_the_budget_to_small_ones() -> None:
    budget = BodyBudget(8 * SMALL_BODY)
    large = budget.reservation()
    assert large.grow(6 * SMALL_BODY)  # exactly three quarters
    assert not budget.reservation().grow(SMALL_BODY + 1)
    small = [budget.reservation() for _ in range(2)]
    assert all(reservation.grow(SMALL_BODY) for reservation in small)
    assert budget.used == budget.capacity
    assert not budget.reservation().grow(1)


def test_a_refused_growth_keeps_what_was_held() -> None:
    budget = BodyBudget(4 * SMALL_BODY)
    reservation = budget.reservation()
    assert reservation.grow(SMALL_BODY)
    assert not reservation.grow(4 * SMALL_BODY)
    assert (reservation.held, budget.used) == (SMALL_BODY, SMALL_BODY)


def _nest(levels: int) -> dict[str, object]:
    obj: dict[str, object] = {}
    for _ in range(levels - 1):
        obj = {"a": obj}
    return obj


def test_depth_is_counted_from_the_object_itself() -> None:
    assert excess(_nest(MAX_OBJECT_DEPTH)) is None
    assert excess(_nest(MAX_OBJECT_DEPTH + 1)) == (
        "a" + ".a" * (MAX_OBJECT_DEPTH - 1) + f" is nested more than {MAX_OBJECT_DEPTH} levels deep"
    )
    assert excess(_nest(10_000)) is not None  # far beyond the recursion limit: the walk does not recurse


def test_the_depth_path_names_list_indices_and_clips_long_keys() -> None:
    deep: object = 1
    for _ in range(MAX_OBJECT_DEPTH):
        deep = [0, deep]
    found = excess({"spec": {"k" * 100: deep}})
    assert found is not None
    assert found.startswith("spec." + "k" * 64 + "... (36 more characters)[1][1]")


def test_values_are_counted_in_containers_and_scalars() -> None:
    assert excess({"a": [0] * (MAX_OBJECT_VALUES - 1)}) is None
    assert excess({"a": [0] * MAX_OBJECT_VALUES}) == (
        f"it holds more than {MAX_OBJECT_VALUES} values; a ModelBooster needs a few thousand at most"
    )


@pytest.mark.parametrize(
    ("obj", "walk_needed"),
    [
        ({"a": [1, 2], "b": {"c": "d"}}, False),
        ({"a": "x" * 2 * MAX_OBJECT_VALUES}, True),
        (_nest(MAX_OBJECT_DEPTH + 1), True),
    ],
)
def test_small_shallow_bodies_skip_the_walk(obj: object, walk_needed: bool) -> None:
    assert surely_within_bounds(json.dumps(obj).encode()) is not walk_needed


def test_glibc_is_found_and_its_threshold_pinned() -> None:
    allocator = Allocator.load()
    assert allocator is not None  # the test machines and the image run glibc
    assert allocator.pin_mmap_threshold()
    allocator.trim()


class _CountingAllocator(Allocator):
    def __init__(self) -> None:
        self.calls = 0

    def trim(self) -> bool:
        self.calls += 1
        return True


def test_a_trim_is_due_after_enough_bytes_are_released() -> None:
    allocator = _CountingAllocator()
    trimmer = Trimmer(allocator, after_bytes=100)
    assert not trimmer.released(60)
    assert trimmer.released(40)
    assert not trimmer.released(500)  # already due: one trim is enough
    trimmer.trim()
    assert (allocator.calls, trimmer.trims) == (1, 1)
    assert not trimmer.released(99)


def test_without_glibc_nothing_is_trimmed() -> None:
    trimmer = Trimmer(None, after_bytes=1)
    assert not trimmer.released(10)
    trimmer.trim()
    assert trimmer.trims == 0
