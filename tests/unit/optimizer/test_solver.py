"""Transition value and the unlimited and greedy solvers on small systems checked by hand.

The rules are those of docs/design/inferno.md §5 and §6.

Candidates are built directly, so every number in a scenario is visible in the test.
"""

from __future__ import annotations

import pytest

from optimizer.solver import ServerCandidates, solve_greedy, solve_unlimited, transition_value
from optimizer.system import Allocation
from shared.api.inferno import SaturationPolicy
from tests.unit.optimizer.builders import cand, chosen, entry

# --- transition value ------------------------------------------------------------------------------------


def test_transition_value_cases() -> None:
    current = Allocation(accelerator="A100", num_replicas=2, cost=80.0)
    assert transition_value(current, cand("s", "A100", 2)) == 0.0  # unchanged
    assert transition_value(current, cand("s", "A100", 3)) == pytest.approx(120 - 80)  # scale only
    assert transition_value(current, cand("s", "A100", 1)) == pytest.approx(40 - 80)  # scale down is negative
    # Move to 3 x G2 (75): 0.1 * (80 + 75) + (75 - 80) = 10.5
    assert transition_value(current, cand("s", "G2", 3)) == pytest.approx(10.5)
    # Nothing allocated yet: the value is 1.1 x cost, so ranking by value is ranking by cost.
    assert transition_value(Allocation(), cand("s", "G2", 3)) == pytest.approx(82.5)


def test_current_cost_is_taken_as_given() -> None:
    # The reference used currentAlloc.cost as written, even if it does not match the accelerator's price.
    stale = Allocation(accelerator="A100", num_replicas=2, cost=1000.0)
    assert transition_value(stale, cand("s", "A100", 3)) == pytest.approx(120 - 1000)


# --- unlimited -------------------------------------------------------------------------------------------


def test_unlimited_takes_each_servers_minimum_value_and_ignores_capacity() -> None:
    placement = solve_unlimited(
        [
            entry("a", 1, cand("a", "A100", 4), cand("a", "G2", 5)),  # values 176 vs 137.5
            entry("b", 2, cand("b", "A100", 1), cand("b", "G2", 2)),  # 44 vs 55
            entry("c", 1),  # no candidate: no allocation
        ]
    )
    assert chosen(placement.chosen) == {"a": ("G2", 5), "b": ("A100", 1)}


def test_unlimited_ties_go_to_the_cheapest_then_the_first_name() -> None:
    # Equal values; H100 is cheaper than A100 here, so it wins; between equal costs the name decides.
    by_cost = solve_unlimited(
        [entry("s", 1, cand("s", "A100", 1, value=5.0), cand("s", "H100", 1, value=5.0, cost=30))]
    )
    assert chosen(by_cost.chosen) == {"s": ("H100", 1)}
    by_name = solve_unlimited(
        [entry("s", 1, cand("s", "T4", 1, value=5.0, cost=40), cand("s", "G2", 1, value=5.0, cost=40))]
    )
    assert chosen(by_name.chosen) == {"s": ("G2", 1)}


# --- greedy ----------------------------------------------------------------------------------------------


def test_greedy_serves_the_largest_regret_first() -> None:
    # Capacity A100: 4, G2: 4. Both servers prefer G2 (3 units), only one can have it.
    # s1: G2 x3 (82.5) then A100 x2 (88): regret 5.5.  s2: G2 x3 (50) then A100 x3 (150): regret 100.
    # s2 goes first and takes G2; s1 falls back to A100 x2.
    placement = solve_greedy(
        [
            entry("s1", 1, cand("s1", "A100", 2), cand("s1", "G2", 3)),
            entry("s2", 1, cand("s2", "G2", 3, value=50.0), cand("s2", "A100", 3, value=150.0)),
        ],
        capacity={"A100": 4, "G2": 4},
    )
    assert chosen(placement.chosen) == {"s2": ("G2", 3), "s1": ("A100", 2)}
    assert not placement.partial


def test_greedy_serves_higher_priority_before_regret() -> None:
    # Same system, but s1 has priority 1 and s2 priority 2: s1 takes G2, s2 must use A100 x3.
    placement = solve_greedy(
        [
            entry("s1", 1, cand("s1", "A100", 2), cand("s1", "G2", 3)),
            entry("s2", 2, cand("s2", "G2", 3, value=50.0), cand("s2", "A100", 3, value=150.0)),
        ],
        capacity={"A100": 4, "G2": 4},
    )
    assert chosen(placement.chosen) == {"s1": ("G2", 3), "s2": ("A100", 3)}


def test_an_entry_that_misses_is_requeued_by_its_new_regret() -> None:
    # Capacity G2: 3, A100: 10, T4: 10. Regrets: y 88, x 20, z 10, so the order is y, x, z.
    # y takes G2 x3. x misses G2, moves to A100 x2 with regret 35 - 30 = 5 and is requeued after z.
    # z takes A100 x9 (1 left). x misses A100 x2, moves to its last candidate T4 x1.
    # Retrying x at once (no requeue) would give x A100 x2 and push z off A100.
    placement = solve_greedy(
        [
            entry(
                "x", 1, cand("x", "G2", 3, value=10.0), cand("x", "A100", 2, value=30.0), cand("x", "T4", 1, value=35.0)
            ),
            entry("y", 1, cand("y", "G2", 3, value=12.0), cand("y", "A100", 3, value=100.0)),
            entry("z", 1, cand("z", "A100", 9, value=50.0), cand("z", "T4", 1, value=60.0)),
        ],
        capacity={"G2": 3, "A100": 10, "T4": 10},
    )
    assert chosen(placement.chosen) == {"y": ("G2", 3), "z": ("A100", 9), "x": ("T4", 1)}


def test_capacity_counts_physical_units_per_type() -> None:
    # A 4-card accelerator: 2 replicas need 8 units; with 4 units of the type only 1 replica would fit,
    # so the server falls back to its second candidate.
    placement = solve_greedy(
        [entry("s", 1, cand("s", "A100", 2, units=4, value=10.0), cand("s", "G2", 5, value=20.0))],
        capacity={"A100": 4, "G2": 8},
    )
    assert chosen(placement.chosen) == {"s": ("G2", 5)}


def test_a_type_missing_from_capacity_has_no_units() -> None:
    placement = solve_greedy(
        [entry("s", 1, cand("s", "H100", 1, value=1.0), cand("s", "G2", 1, value=2.0))], capacity={"G2": 1}
    )
    assert chosen(placement.chosen) == {"s": ("G2", 1)}


def test_zero_replica_candidates_always_fit() -> None:
    placement = solve_greedy([entry("idle", 1, cand("idle", "H100", 0, value=0.0))], capacity={})
    assert chosen(placement.chosen) == {"idle": ("H100", 0)}


def test_ties_between_entries_are_broken_by_server_name() -> None:
    # Identical needs, room for one: "a" is served before "b" every time.
    systems = [[entry(name, 1, cand(name, "G2", 2)) for name in order] for order in (("a", "b"), ("b", "a"))]
    results = [chosen(solve_greedy(system, capacity={"G2": 3}).chosen) for system in systems]
    assert results == [{"a": ("G2", 2)}, {"a": ("G2", 2)}]


# --- capacity exhaustion and the saturation policies -----------------------------------------------------
# One type, G2 (1 unit per replica, 25 per replica). a (priority 1) needs 7 replicas, b and c (priority 2)
# need 4 each. With 6 units nobody but b can be served in full.


def exhaustion_system() -> list[ServerCandidates]:
    return [
        entry("a", 1, cand("a", "G2", 7)),
        entry("b", 2, cand("b", "G2", 4)),
        entry("c", 2, cand("c", "G2", 4)),
    ]


@pytest.mark.parametrize(
    ("policy", "expected", "partial"),
    [
        # Group 1: a misses (7 > 6); None leaves it out. Group 2: b takes 4 (2 left), c misses (4 > 2).
        ("None", {"b": ("G2", 4)}, set()),
        # Group 1: a misses and immediately takes all 6 units; group 2 then finds nothing.
        ("PriorityExhaustive", {"a": ("G2", 6)}, {"a"}),
        ("RoundRobin", {"a": ("G2", 6)}, {"a"}),
        ("PriorityRoundRobin", {"a": ("G2", 6)}, {"a"}),
    ],
)
def test_saturation_per_priority_group(
    policy: SaturationPolicy, expected: dict[str, tuple[str, int]], partial: set[str]
) -> None:
    placement = solve_greedy(exhaustion_system(), capacity={"G2": 6}, saturation_policy=policy)
    assert chosen(placement.chosen) == expected
    assert placement.partial == partial


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # All groups first: a misses, b takes 4 (2 left), c misses. Then best effort over [a, c]:
        ("None", {"b": ("G2", 4)}),
        ("PriorityExhaustive", {"b": ("G2", 4), "a": ("G2", 2)}),  # a first, takes both units
        ("RoundRobin", {"b": ("G2", 4), "a": ("G2", 1), "c": ("G2", 1)}),  # one each
        ("PriorityRoundRobin", {"b": ("G2", 4), "a": ("G2", 2)}),  # priority 1 round robin first
    ],
)
def test_saturation_delayed_until_all_groups_ran(
    policy: SaturationPolicy, expected: dict[str, tuple[str, int]]
) -> None:
    placement = solve_greedy(
        exhaustion_system(), capacity={"G2": 6}, saturation_policy=policy, delayed_best_effort=True
    )
    assert chosen(placement.chosen) == expected
    assert placement.partial == set(expected) - {"b"}


def test_partial_allocations_scale_cost_and_value() -> None:
    placement = solve_greedy(
        exhaustion_system(), capacity={"G2": 6}, saturation_policy="PriorityExhaustive", delayed_best_effort=True
    )
    a = placement.chosen["a"]
    assert a.cost == pytest.approx(175 * 2 / 7)  # 7 x 25 scaled to 2 of 7 replicas
    assert a.value == pytest.approx(1.1 * 175 * 2 / 7)


def test_best_effort_takes_the_first_candidate_that_fits_in_value_order() -> None:
    # s needs 5 x A100 (3 free) or 4 x G2 (2 free): exhaustive takes 3 x A100, its better candidate.
    placement = solve_greedy(
        [entry("s", 1, cand("s", "A100", 5, value=1.0), cand("s", "G2", 4, value=2.0))],
        capacity={"A100": 3, "G2": 2},
        saturation_policy="PriorityExhaustive",
    )
    assert chosen(placement.chosen) == {"s": ("A100", 3)}
    # Round robin fixes the first candidate with a free unit and never switches.
    placement = solve_greedy(
        [entry("s", 1, cand("s", "A100", 5, value=1.0), cand("s", "G2", 4, value=2.0))],
        capacity={"A100": 0, "G2": 2},
        saturation_policy="RoundRobin",
    )
    assert chosen(placement.chosen) == {"s": ("G2", 2)}


def test_round_robin_respects_units_per_replica() -> None:
    # Two servers on 2-card replicas with 5 units: rounds give 2 + 2 units, the last unit is useless.
    placement = solve_greedy(
        [entry("p", 1, cand("p", "A100", 4, units=2)), entry("q", 1, cand("q", "A100", 4, units=2))],
        capacity={"A100": 5},
        saturation_policy="RoundRobin",
    )
    assert chosen(placement.chosen) == {"p": ("A100", 1), "q": ("A100", 1)}


def test_regret_of_a_single_candidate_is_infinite() -> None:
    # With one candidate a server cannot fall back, so it goes before servers that can.
    placement = solve_greedy(
        [
            entry("flexible", 1, cand("flexible", "G2", 2, value=1.0), cand("flexible", "T4", 2, value=1000.0)),
            entry("rigid", 1, cand("rigid", "G2", 2, value=1.0)),
        ],
        capacity={"G2": 2, "T4": 2},
    )
    assert chosen(placement.chosen) == {"rigid": ("G2", 2), "flexible": ("T4", 2)}
