"""The MILP modes on HiGHS (docs/design/inferno.md §6), on systems small enough to solve by hand."""

from __future__ import annotations

import sys

import pytest

from optimizer import milp as milp_module
from optimizer.milp import MilpError, MilpUnavailableError, solve_milp
from optimizer.solver import ServerCandidates, solve_greedy
from tests.unit.optimizer.builders import cand, chosen, entry, rated

needs_scipy = pytest.mark.skipif(not milp_module.milp_available(), reason="SciPy (the 'milp' extra) is not installed")


@needs_scipy
def test_single_assignment_finds_the_cheapest_combination_and_ignores_priority() -> None:
    # Only one of s1, s2 can have G2 (3 of 4 units). s1 on G2 + s2 on A100 = 75 + 80 = 155;
    # s2 on G2 + s1 on A100 = 75 + 120 = 195. Greedy serves s2 first (priority 1) and pays 195.
    system = [
        entry("s1", 2, cand("s1", "G2", 3), cand("s1", "A100", 3)),
        entry("s2", 1, cand("s2", "G2", 3), cand("s2", "A100", 2)),
    ]
    capacity = {"G2": 4, "A100": 4}
    optimal = solve_milp(system, capacity=capacity, heterogeneous=False)
    assert chosen(optimal.chosen) == {"s1": ("G2", 3), "s2": ("A100", 2)}
    greedy = solve_greedy(system, capacity=capacity)
    assert chosen(greedy.chosen) == {"s2": ("G2", 3), "s1": ("A100", 3)}


@needs_scipy
def test_single_assignment_breaks_ties_by_accelerator_name() -> None:
    # G2 x2 and A100 x2 both cost 80 here: the first name in sorted order, A100, wins for both servers.
    system = [entry(name, 1, cand(name, "G2", 2, cost=80.0), cand(name, "A100", 2, cost=80.0)) for name in ("p", "q")]
    placement = solve_milp(system, capacity={"G2": 10, "A100": 10}, heterogeneous=False)
    assert chosen(placement.chosen) == {"p": ("A100", 2), "q": ("A100", 2)}


@needs_scipy
def test_single_assignment_that_cannot_place_everyone_is_an_error() -> None:
    with pytest.raises(MilpError, match="infeasible"):
        solve_milp([entry("s", 1, cand("s", "G2", 3))], capacity={"G2": 2}, heterogeneous=False)


@needs_scipy
def test_servers_without_usable_candidates_are_left_out() -> None:
    # "lost" only has an H100 candidate and the capacity has no H100 entry.
    placement = solve_milp(
        [entry("lost", 1, cand("lost", "H100", 1)), entry("ok", 1, cand("ok", "G2", 1))],
        capacity={"G2": 1},
        heterogeneous=False,
    )
    assert chosen(placement.chosen) == {"ok": ("G2", 1)}


@needs_scipy
def test_multi_assignment_splits_a_server_across_types() -> None:
    # Demand 5 rpm. A100 carries 2 rpm per replica for 40, G2 1 rpm for 25; 1 A100 free, 10 G2.
    # Best: 1 A100 + 3 G2 = 115 (5 G2 would be 125; 2 A100 do not fit).
    a100 = rated("s", "A100", 3, rpm_per_replica=2.0, demand_rpm=5)
    g2 = rated("s", "G2", 5, rpm_per_replica=1.0, demand_rpm=5)
    system = [ServerCandidates(server="s", priority=1, candidates=(a100, g2), demand=5 / 60000)]
    placement = solve_milp(system, capacity={"A100": 1, "G2": 10}, heterogeneous=True)
    assert placement.splits == {"s": {"A100": 1, "G2": 3}}
    # The wire holds one accelerator: the one carrying most of the demand (G2: 3 rpm), as its own candidate.
    assert chosen(placement.chosen) == {"s": ("G2", 5)}


@needs_scipy
def test_multi_assignment_honours_min_replicas() -> None:
    g2 = rated("s", "G2", 5, rpm_per_replica=1.0, demand_rpm=0)
    system = [ServerCandidates(server="s", priority=1, candidates=(g2,), demand=0.0, min_replicas=2)]
    placement = solve_milp(system, capacity={"G2": 10}, heterogeneous=True)
    assert placement.splits == {"s": {"G2": 2}}


def test_missing_scipy_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)  # makes the import fail
    assert not milp_module.milp_available()
    with pytest.raises(MilpUnavailableError, match=r"MILP solver requires the 'milp' extra \(scipy\)"):
        solve_milp([entry("s", 1, cand("s", "G2", 1))], capacity={"G2": 1}, heterogeneous=False)
