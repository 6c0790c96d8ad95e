"""One optimisation end to end: checks, candidate selection, solver choice and the outputs.

The outputs, besides the allocations, are those of docs/design/inferno.md §6 (last paragraph).
"""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.milp import MilpUnavailableError
from optimizer.optimize import InvalidSystemError, build_candidates, check_system, format_report, optimize
from optimizer.system import (
    Accelerator,
    Allocation,
    Load,
    ModelTarget,
    OptimizerFlags,
    PerfData,
    Server,
    ServiceClass,
    System,
)


def perf(acc: str, *, alpha: float = 17.15, beta: float = 0.34, acc_count: int = 1) -> PerfData:
    return PerfData(
        model="granite", accelerator=acc, acc_count=acc_count, alpha=alpha, beta=beta, max_batch_size=38, at_tokens=512
    )


def granite_server(name: str, *, cls: str = "Premium", rate: float = 60, current: Allocation | None = None) -> Server:
    load = Load(arrival_rate=rate, avg_length=1024)
    base = current if current is not None else Allocation()
    return Server(name=name, class_name=cls, model="granite", current=replace(base, load=load))


def worked_example_system() -> System:
    """The worked example of docs/design/inferno.md §12: granite on G2 (cost 23), 60 rpm x 1024 tokens, ITL 40 ms,
    TTW 500 ms."""
    return System(
        accelerators={"G2": Accelerator(name="G2", type="G2", cost=23)},
        models={"granite": {"G2": perf("G2")}},
        service_classes={
            "Premium": ServiceClass(name="Premium", priority=1, targets=(ModelTarget("granite", 40, 500),))
        },
        servers={"Premium-granite_13b": granite_server("Premium-granite_13b")},
        capacity={"G2": 8},
    )


def test_worked_example_through_the_engine() -> None:
    solution = optimize(worked_example_system())
    assert solution.solver == "greedy"
    result = solution.allocations["Premium-granite_13b"]
    allocation = result.allocation
    assert (allocation.accelerator, allocation.num_replicas, allocation.max_batch, allocation.cost) == ("G2", 2, 19, 46)
    assert allocation.itl_average == pytest.approx(21.16437, rel=6e-6)
    assert allocation.wait_average == pytest.approx(102.09766, abs=0.01)
    assert allocation.load == Load(arrival_rate=60, avg_length=1024)  # the server's load rides along
    assert not result.partial
    assert not result.saturated
    assert result.candidates == 1
    assert solution.total_cost == 46
    assert solution.usage["G2"].units == 2
    assert solution.usage["G2"].limit == 8
    assert solution.usage["G2"].cost == 46
    assert solution.unallocated == ()
    (change,) = solution.changes
    assert (change.old_accelerator, change.old_replicas, change.new_accelerator, change.new_replicas) == (
        "",
        0,
        "G2",
        2,
    )
    assert change.cost_delta == 46
    assert solution.desired()["Premium-granite_13b"] == allocation
    assert "Premium-granite_13b: 2 x G2" in format_report(solution)


def test_check_system_names_each_problem() -> None:
    system = worked_example_system()
    system.servers = {
        "a": Server(name="a", class_name="Gold", model="granite"),
        "b": Server(name="b", class_name="Premium", model="llama"),
        "c": Server(name="c", class_name="Premium", model="granite", current=Allocation(accelerator="H100")),
    }
    system.models["mixtral"] = {}
    system.servers["d"] = Server(name="d", class_name="Premium", model="mixtral")
    assert check_system(system) == [
        "server a: unknown service class 'Gold'",
        "server b: unknown model 'llama'",
        "server c: currentAlloc names unknown accelerator 'H100'",
        "server d: service class 'Premium' has no target for model 'mixtral'",
    ]
    with pytest.raises(InvalidSystemError, match="server a: unknown service class 'Gold'"):
        optimize(system)


def test_an_empty_class_means_free() -> None:
    system = worked_example_system()
    system.service_classes["Free"] = ServiceClass(name="Free", priority=2, targets=(ModelTarget("granite", 80),))
    system.servers = {"anon": granite_server("anon", cls="")}
    assert check_system(system) == []
    assert "anon" in optimize(system).allocations


def test_candidates_cover_accelerators_with_perf_data_only() -> None:
    system = worked_example_system()
    system.accelerators["A100"] = Accelerator(name="A100", type="A100", cost=40)
    system.accelerators["H100"] = Accelerator(name="H100", type="H100", cost=90)  # no perf data for granite
    system.models["granite"]["A100"] = perf("A100", alpha=12.0, beta=0.28)
    candidates = build_candidates(system)
    assert [c.accelerator for c in candidates["Premium-granite_13b"]] == ["A100", "G2"]


def test_keep_accelerator_limits_candidates_to_the_current_one() -> None:
    system = worked_example_system()
    system.accelerators["A100"] = Accelerator(name="A100", type="A100", cost=40)
    system.models["granite"]["A100"] = perf("A100", alpha=12.0, beta=0.28)
    current = Allocation(accelerator="A100", num_replicas=1, cost=40)
    server = granite_server("s", current=current)
    kept = Server(name="s", class_name="Premium", model="granite", current=server.current, keep_accelerator=True)
    system.servers = {"s": kept}
    assert [c.accelerator for c in build_candidates(system)["s"]] == ["A100"]


def test_values_carry_the_transition_penalty() -> None:
    system = worked_example_system()
    system.accelerators["A100"] = Accelerator(name="A100", type="A100", cost=40)
    system.models["granite"]["A100"] = perf("A100", alpha=12.0, beta=0.28)
    current = Allocation(accelerator="A100", num_replicas=1, cost=40)
    system.servers = {"s": granite_server("s", current=current)}
    by_acc = {c.accelerator: c for c in build_candidates(system)["s"]}
    g2 = by_acc["G2"]
    assert g2.value == pytest.approx(0.1 * (40 + g2.cost) + (g2.cost - 40))
    a100 = by_acc["A100"]
    expected = 0.0 if a100.num_replicas == 1 else a100.cost - 40
    assert a100.value == pytest.approx(expected)


def test_unlimited_wins_over_milp_and_reports_no_limits() -> None:
    system = worked_example_system()
    system.capacity = {}
    solution = optimize(system, OptimizerFlags(unlimited=True, milp_solver=True))
    assert solution.solver == "unlimited"
    assert solution.usage["G2"].limit is None
    assert solution.allocations["Premium-granite_13b"].allocation.num_replicas == 2


def test_greedy_without_room_leaves_the_server_out_or_partial() -> None:
    system = worked_example_system()
    system.capacity = {"G2": 1}  # the server needs 2
    none = optimize(system)
    assert none.allocations == {}
    assert none.unallocated == ("Premium-granite_13b",)
    partial = optimize(system, OptimizerFlags(saturation_policy="PriorityExhaustive"))
    result = partial.allocations["Premium-granite_13b"]
    assert result.partial
    assert result.saturated
    assert result.allocation.num_replicas == 1
    assert result.allocation.cost == 23
    assert result.allocation.wait_average > 102.1  # the whole load on one replica waits longer


def test_a_dropped_server_shows_in_the_changes() -> None:
    system = worked_example_system()
    system.capacity = {}
    current = Allocation(accelerator="G2", num_replicas=3, cost=69)
    system.servers = {"s": granite_server("s", current=current)}
    (change,) = optimize(system).changes
    assert (change.server, change.new_accelerator, change.new_replicas, change.cost_delta) == ("s", "", 0, -69)


def test_milp_without_scipy_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    with pytest.raises(MilpUnavailableError, match=r"MILP solver requires the 'milp' extra \(scipy\)"):
        optimize(worked_example_system(), OptimizerFlags(milp_solver=True))


def two_accelerator_system(*, scale: float, itl: float, ttw: float) -> System:
    targets = (ModelTarget("granite", itl, ttw),)
    return System(
        accelerators={
            "A100": Accelerator(name="A100", type="A100", cost=40),
            "G2": Accelerator(name="G2", type="G2", cost=23),
        },
        models={"granite": {"A100": perf("A100", alpha=12.0, beta=0.28), "G2": perf("G2")}},
        service_classes={"Premium": ServiceClass(name="Premium", priority=1, targets=targets)},
        servers={name: granite_server(name, rate=rate * scale) for name, rate in (("a", 30), ("b", 300), ("c", 900))},
    )


@settings(max_examples=25, deadline=None)
@given(scales=st.tuples(st.floats(0.1, 10.0), st.floats(0.1, 10.0)), itl=st.floats(25, 100), ttw=st.floats(50, 3000))
def test_unlimited_cost_never_falls_when_load_rises(scales: tuple[float, float], itl: float, ttw: float) -> None:
    low, high = sorted(scales)
    flags = OptimizerFlags(unlimited=True)
    at_low = optimize(two_accelerator_system(scale=low, itl=itl, ttw=ttw), flags)
    at_high = optimize(two_accelerator_system(scale=high, itl=itl, ttw=ttw), flags)
    assert at_high.total_cost >= at_low.total_cost
    for name, result in at_low.allocations.items():
        assert at_high.allocations[name].allocation.cost >= result.allocation.cost


@settings(max_examples=25, deadline=None)
@given(
    scale=st.floats(0.1, 10.0),
    itls=st.tuples(st.floats(25, 100), st.floats(25, 100)),
    ttws=st.tuples(st.floats(50, 3000), st.floats(50, 3000)),
)
def test_unlimited_cost_never_rises_when_slos_loosen(
    scale: float, itls: tuple[float, float], ttws: tuple[float, float]
) -> None:
    flags = OptimizerFlags(unlimited=True)
    tight = optimize(two_accelerator_system(scale=scale, itl=min(itls), ttw=min(ttws)), flags)
    loose = optimize(two_accelerator_system(scale=scale, itl=max(itls), ttw=max(ttws)), flags)
    assert loose.total_cost <= tight.total_cost
    assert set(loose.allocations) >= set(tight.allocations)
