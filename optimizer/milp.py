"""The MILP modes on SciPy's HiGHS (an optional extra), single and multi assignment over the precomputed
candidates; where they depart from the reference's lp_solve/CPLEX formulations is in docs/design/inferno.md §6."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from optimizer.sizing import MS_PER_MINUTE, Candidate
from optimizer.solver import Placement, ServerCandidates

MILP_MISSING_MESSAGE: Final = "MILP solver requires the 'milp' extra (scipy)"
TIME_LIMIT_SECONDS: Final = 60.0
# Cost tolerance when fixing the optimum for the tie-breaking solve.
_COST_SLACK_RELATIVE: Final = 1e-9
_COST_SLACK_ABSOLUTE: Final = 1e-6


class MilpUnavailableError(RuntimeError):
    """SciPy is not installed."""

    def __init__(self) -> None:
        super().__init__(MILP_MISSING_MESSAGE)


class MilpError(RuntimeError):
    """The solver found no feasible solution (or failed)."""


@dataclass(frozen=True, slots=True)
class _Variable:
    server: str
    candidate: Candidate


def _scipy() -> tuple[Any, Any, Any, Any]:
    # Imported on use: SciPy is the optional 'milp' extra and the greedy solvers must work without it.
    try:
        import numpy as np  # noqa: PLC0415
        from scipy.optimize import Bounds, LinearConstraint, milp  # noqa: PLC0415
    except ImportError as error:
        raise MilpUnavailableError() from error
    return np, Bounds, LinearConstraint, milp


def milp_available() -> bool:
    try:
        _scipy()
    except MilpUnavailableError:
        return False
    return True


def solve_milp(
    entries: Sequence[ServerCandidates],
    *,
    capacity: Mapping[str, int],
    heterogeneous: bool,
    time_limit: float = TIME_LIMIT_SECONDS,
) -> Placement:
    np, bounds_type, constraint_type, milp = _scipy()
    variables = [
        _Variable(entry.server, candidate)
        for entry in entries
        for candidate in sorted(entry.candidates, key=lambda c: c.accelerator)
        if candidate.units == 0 or candidate.acc_type in capacity
    ]
    servers_with_variables = {v.server for v in variables}
    placeable = [entry for entry in entries if entry.server in servers_with_variables]
    if not variables:
        return Placement()
    index_of_server = {entry.server: row for row, entry in enumerate(placeable)}
    types = sorted({v.candidate.acc_type for v in variables if v.candidate.acc_type in capacity})
    index_of_type = {acc_type: row for row, acc_type in enumerate(types)}
    count = len(variables)

    if heterogeneous:
        cost = np.array([v.candidate.cost_per_replica for v in variables], dtype=float)
        units = np.array([v.candidate.units_per_replica for v in variables], dtype=float)
        upper = np.array(
            [
                capacity.get(v.candidate.acc_type, 0) // v.candidate.units_per_replica
                if v.candidate.acc_type in capacity
                else 0
                for v in variables
            ],
            dtype=float,
        )
        # Rates in requests/min keep the coefficients near 1 for the solver.
        rate = np.array([v.candidate.max_rate_per_replica * MS_PER_MINUTE for v in variables], dtype=float)
        demand_rows = np.zeros((len(placeable), count))
        replica_rows = np.zeros((len(placeable), count))
        for column, v in enumerate(variables):
            demand_rows[index_of_server[v.server], column] = rate[column]
            replica_rows[index_of_server[v.server], column] = 1.0
        demand = np.array([entry.demand * MS_PER_MINUTE for entry in placeable], dtype=float)
        minimum = np.array([float(entry.min_replicas) for entry in placeable], dtype=float)
        constraints = [
            constraint_type(demand_rows, lb=demand, ub=np.inf),
            constraint_type(replica_rows, lb=minimum, ub=np.inf),
        ]
    else:
        cost = np.array([v.candidate.cost for v in variables], dtype=float)
        units = np.array([v.candidate.units for v in variables], dtype=float)
        upper = np.ones(count)
        choice_rows = np.zeros((len(placeable), count))
        for column, v in enumerate(variables):
            choice_rows[index_of_server[v.server], column] = 1.0
        constraints = [constraint_type(choice_rows, lb=1.0, ub=1.0)]
    if types:
        capacity_rows = np.zeros((len(types), count))
        for column, v in enumerate(variables):
            row = index_of_type.get(v.candidate.acc_type)
            if row is not None:
                capacity_rows[row, column] = units[column]
        limits = np.array([float(capacity[t]) for t in types], dtype=float)
        constraints.append(constraint_type(capacity_rows, lb=-np.inf, ub=limits))

    integrality = np.ones(count)
    bounds = bounds_type(lb=np.zeros(count), ub=upper)
    options = {"time_limit": time_limit}
    first = milp(cost, integrality=integrality, bounds=bounds, constraints=constraints, options=options)
    solution = _accepted(first, heterogeneous=heterogeneous)

    # Among equal-cost optima prefer accelerator names in sorted order (docs/design/inferno.md §7).
    names = sorted({v.candidate.accelerator for v in variables})
    rank = np.array([float(names.index(v.candidate.accelerator)) for v in variables], dtype=float)
    best = float(cost @ solution)
    slack = abs(best) * _COST_SLACK_RELATIVE + _COST_SLACK_ABSOLUTE
    tie_constraints = [*constraints, constraint_type(cost.reshape(1, -1), lb=-np.inf, ub=best + slack)]
    second = milp(rank, integrality=integrality, bounds=bounds, constraints=tie_constraints, options=options)
    if second.x is not None:
        solution = second.x

    return _placement(variables, [round(float(value)) for value in solution], heterogeneous=heterogeneous)


def _accepted(result: Any, *, heterogeneous: bool) -> Any:
    if result.x is not None and result.status in (0, 1):
        return result.x
    mode = "multi assignment" if heterogeneous else "single assignment"
    if result.status == 2:
        hint = "" if heterogeneous else " (single assignment must place every server)"
        raise MilpError(f"MILP {mode} is infeasible: the capacity cannot host the servers{hint}")
    raise MilpError(f"MILP {mode} failed: {result.message}")


def _placement(variables: Sequence[_Variable], values: Sequence[int], *, heterogeneous: bool) -> Placement:
    placement = Placement()
    if not heterogeneous:
        for v, value in zip(variables, values, strict=True):
            if value > 0:
                placement.chosen[v.server] = v.candidate
        return placement
    by_server: dict[str, list[tuple[_Variable, int]]] = {}
    for v, value in zip(variables, values, strict=True):
        by_server.setdefault(v.server, []).append((v, value))
    for server, pairs in by_server.items():
        used = [(v, value) for v, value in pairs if value > 0]
        if used:
            placement.splits[server] = {v.candidate.accelerator: value for v, value in used}
            dominant, _ = min(
                used,
                key=lambda pair: (
                    -pair[1] * pair[0].candidate.max_rate_per_replica,
                    pair[0].candidate.cost,
                    pair[0].candidate.accelerator,
                ),
            )
            placement.chosen[server] = dominant.candidate
        else:  # no demand and no minimum: zero replicas, on the cheapest accelerator by name
            placement.chosen[server] = min((v.candidate for v, _ in pairs), key=lambda c: (c.cost, c.accelerator))
    return placement
