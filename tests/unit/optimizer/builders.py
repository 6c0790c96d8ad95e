"""Hand-built candidates for solver tests: every number of a scenario stays visible in the test."""

from __future__ import annotations

from dataclasses import replace

from optimizer.sizing import Candidate
from optimizer.solver import ServerCandidates

UNIT_COST = {"A100": 40.0, "G2": 25.0, "T4": 10.0, "H100": 90.0}


def cand(
    server: str,
    accelerator: str,
    replicas: int,
    *,
    value: float | None = None,
    units: int = 1,
    cost: float | None = None,
) -> Candidate:
    total = UNIT_COST[accelerator] * replicas if cost is None else cost
    return Candidate(
        server=server,
        accelerator=accelerator,
        acc_type=accelerator,
        units_per_replica=units,
        cost_per_replica=total / replicas if replicas else UNIT_COST[accelerator],
        num_replicas=replicas,
        max_batch=8,
        cost=total,
        value=1.1 * total if value is None else value,
        itl_average=20.0,
        wait_average=10.0,
        rho=0.5,
        max_rate_per_replica=0.001,
        demand=0.001 * replicas,
    )


def entry(server: str, priority: int, *candidates: Candidate) -> ServerCandidates:
    return ServerCandidates(server=server, priority=priority, candidates=candidates)


def chosen(placement_chosen: dict[str, Candidate]) -> dict[str, tuple[str, int]]:
    return {name: (c.accelerator, c.num_replicas) for name, c in placement_chosen.items()}


def rated(server: str, accelerator: str, replicas: int, *, rpm_per_replica: float, demand_rpm: float) -> Candidate:
    """A candidate that carries `rpm_per_replica` requests/min per replica, for the multi-assignment MILP."""
    return replace(
        cand(server, accelerator, replicas),
        max_rate_per_replica=rpm_per_replica / 60000,
        demand=demand_rpm / 60000,
    )
