"""One optimisation, end to end: system in, solution out (docs/design/inferno.md §2, §4-§6). Pure: no I/O.
Servers that name an unknown class, model or accelerator are refused by name (the reference dropped them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from optimizer.milp import solve_milp
from optimizer.sizing import Candidate, SizingRequest, size_candidates
from optimizer.solver import (
    Placement,
    ServerCandidates,
    solve_greedy,
    solve_unlimited,
    transition_value,
)
from optimizer.system import FREE_CLASS, Allocation, OptimizerFlags, Server, System
from shared.api.inferno import LOWEST_PRIORITY

logger = logging.getLogger(__name__)

SolverName = Literal["unlimited", "greedy", "milp-single", "milp-multi"]


class InvalidSystemError(ValueError):
    """The system refers to things it does not define; `problems` lists each one."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True, slots=True)
class ServerResult:
    server: str
    allocation: Allocation
    candidate: Candidate
    partial: bool  # placed by a saturation policy with fewer replicas than it needs
    saturated: bool  # demand above what the replicas can serve within the SLOs
    candidates: int


@dataclass(frozen=True, slots=True)
class TypeUsage:
    acc_type: str
    units: int
    limit: int | None  # None: the type has no capacity entry
    cost: float


@dataclass(frozen=True, slots=True)
class AllocationChange:
    server: str
    old_accelerator: str
    old_replicas: int
    new_accelerator: str
    new_replicas: int
    cost_delta: float


@dataclass(frozen=True, slots=True)
class Solution:
    allocations: dict[str, ServerResult]
    unallocated: tuple[str, ...]  # servers with no allocation: no feasible candidate, or no room
    usage: dict[str, TypeUsage]
    total_cost: float
    changes: tuple[AllocationChange, ...]
    solver: SolverName
    solve_seconds: float
    splits: dict[str, dict[str, int]] = field(default_factory=dict)

    def desired(self) -> dict[str, Allocation]:
        return {name: result.allocation for name, result in self.allocations.items()}


def check_system(system: System) -> list[str]:
    """Problems that make a server impossible to size, one readable line each."""
    problems = []
    for server in system.servers.values():
        class_name = server.class_name or FREE_CLASS
        service_class = system.service_classes.get(class_name)
        if service_class is None:
            problems.append(f"server {server.name}: unknown service class {class_name!r}")
        elif server.model in system.models and service_class.target_for(server.model) is None:
            problems.append(
                f"server {server.name}: service class {class_name!r} has no target for model {server.model!r}"
            )
        if server.model not in system.models:
            problems.append(f"server {server.name}: unknown model {server.model!r}")
        current = server.current.accelerator
        if current and current not in system.accelerators:
            problems.append(f"server {server.name}: currentAlloc names unknown accelerator {current!r}")
        if server.min_num_replicas < 0 or server.max_batch_size < 0:
            problems.append(f"server {server.name}: minNumReplicas and maxBatchSize must be >= 0")
    return problems


def build_candidates(system: System) -> dict[str, list[Candidate]]:
    """Per server, its sized and valued candidates (empty when nothing meets its targets).

    Every (server, accelerator) pair of the system is sized in one call, which solves their queues together.
    """
    names = sorted(system.servers)
    requests = {name: _sizing_requests(system, system.servers[name]) for name in names}
    sized = iter(size_candidates([request for name in names for request in requests[name]]))
    result: dict[str, list[Candidate]] = {}
    for name in names:
        current = system.servers[name].current
        found = [next(sized) for _ in requests[name]]
        result[name] = [
            replace(candidate, value=transition_value(current, candidate))
            for candidate in found
            if candidate is not None
        ]
    return result


def _sizing_requests(system: System, server: Server) -> list[SizingRequest]:
    service_class = system.class_of(server)
    target = service_class.target_for(server.model) if service_class is not None else None
    if target is None:
        return []
    names = sorted(system.accelerators)
    if server.keep_accelerator and server.current.accelerator:
        names = [server.current.accelerator] if server.current.accelerator in system.accelerators else []
    requests = []
    for name in names:
        perf = system.perf(server.model, name)
        if perf is not None:
            accelerator = system.accelerators[name]
            requests.append(SizingRequest(server=server, accelerator=accelerator, perf=perf, target=target))
    return requests


def optimize(system: System, flags: OptimizerFlags | None = None) -> Solution:
    """Size every server and choose allocations; raises InvalidSystemError, MilpError, MilpUnavailableError."""
    flags = flags if flags is not None else system.flags
    problems = check_system(system)
    if problems:
        raise InvalidSystemError(problems)
    started = time.perf_counter()
    candidates = build_candidates(system)
    entries = [
        ServerCandidates(
            server=name,
            priority=_priority(system, system.servers[name]),
            candidates=tuple(found),
            demand=found[0].demand if found else 0.0,
            min_replicas=system.servers[name].min_num_replicas,
        )
        for name, found in candidates.items()
    ]
    solver: SolverName
    if flags.unlimited:
        solver, placement = "unlimited", solve_unlimited(entries)
    elif flags.milp_solver:
        solver = "milp-multi" if flags.heterogeneous else "milp-single"
        placement = solve_milp(entries, capacity=system.capacity, heterogeneous=flags.heterogeneous)
    else:
        solver = "greedy"
        placement = solve_greedy(
            entries,
            capacity=system.capacity,
            saturation_policy=flags.saturation_policy,
            delayed_best_effort=flags.delayed_best_effort,
        )
    solution = _solution(
        system,
        placement,
        candidates=candidates,
        solver=solver,
        limited=not flags.unlimited,
        seconds=time.perf_counter() - started,
    )
    if logger.isEnabledFor(logging.INFO):
        logger.info("%s", format_report(solution))
    return solution


def _priority(system: System, server: Server) -> int:
    service_class = system.class_of(server)
    return service_class.priority if service_class is not None else LOWEST_PRIORITY


def _solution(
    system: System,
    placement: Placement,
    *,
    candidates: Mapping[str, list[Candidate]],
    solver: SolverName,
    limited: bool,
    seconds: float,
) -> Solution:
    allocations: dict[str, ServerResult] = {}
    usage_units: dict[str, int] = {}
    usage_cost: dict[str, float] = {}
    changes = []
    for name in sorted(system.servers):
        server = system.servers[name]
        chosen = placement.chosen.get(name)
        current = server.current
        if chosen is None:
            if current.accelerator:
                changes.append(
                    AllocationChange(
                        server=name,
                        old_accelerator=current.accelerator,
                        old_replicas=current.num_replicas,
                        new_accelerator="",
                        new_replicas=0,
                        cost_delta=-current.cost,
                    )
                )
            continue
        allocation = Allocation(
            accelerator=chosen.accelerator,
            num_replicas=chosen.num_replicas,
            max_batch=chosen.max_batch,
            cost=chosen.cost,
            itl_average=chosen.itl_average,
            wait_average=chosen.wait_average,
            load=server.load,
        )
        allocations[name] = ServerResult(
            server=name,
            allocation=allocation,
            candidate=chosen,
            partial=name in placement.partial,
            saturated=chosen.demand > 0 and chosen.saturated,
            candidates=len(candidates.get(name, ())),
        )
        usage_units[chosen.acc_type] = usage_units.get(chosen.acc_type, 0) + chosen.units
        usage_cost[chosen.acc_type] = usage_cost.get(chosen.acc_type, 0.0) + chosen.cost
        if (chosen.accelerator, chosen.num_replicas) != (current.accelerator, current.num_replicas):
            changes.append(
                AllocationChange(
                    server=name,
                    old_accelerator=current.accelerator,
                    old_replicas=current.num_replicas,
                    new_accelerator=chosen.accelerator,
                    new_replicas=chosen.num_replicas,
                    cost_delta=chosen.cost - current.cost,
                )
            )
    usage = {
        acc_type: TypeUsage(
            acc_type=acc_type,
            units=usage_units[acc_type],
            limit=system.capacity.get(acc_type) if limited else None,
            cost=usage_cost[acc_type],
        )
        for acc_type in sorted(usage_units)
    }
    return Solution(
        allocations=allocations,
        unallocated=tuple(name for name in sorted(system.servers) if name not in allocations),
        usage=usage,
        total_cost=sum(result.allocation.cost for result in allocations.values()),
        changes=tuple(changes),
        solver=solver,
        solve_seconds=seconds,
        splits=placement.splits,
    )


def format_report(solution: Solution) -> str:
    """The human summary the reference printed after each run."""
    lines = [
        f"inferno {solution.solver}: {len(solution.allocations)} servers allocated, "
        f"{len(solution.unallocated)} unallocated, total cost {solution.total_cost:g} c/h, "
        f"solved in {solution.solve_seconds:.3f}s"
    ]
    for name, result in solution.allocations.items():
        a = result.allocation
        flags = "".join([" saturated" if result.saturated else "", " partial" if result.partial else ""])
        lines.append(
            f"  {name}: {a.num_replicas} x {a.accelerator} (batch {a.max_batch}, cost {a.cost:g}, "
            f"itl {a.itl_average:.3f} ms, wait {a.wait_average:.3f} ms, {result.candidates} candidates){flags}"
        )
    for usage in solution.usage.values():
        limit = "unlimited" if usage.limit is None else str(usage.limit)
        lines.append(f"  type {usage.acc_type}: {usage.units} of {limit} units, cost {usage.cost:g}")
    for change in solution.changes:
        lines.append(
            f"  change {change.server}: {change.old_replicas} x {change.old_accelerator or '-'} -> "
            f"{change.new_replicas} x {change.new_accelerator or '-'} (cost {change.cost_delta:+g})"
        )
    return "\n".join(lines)
