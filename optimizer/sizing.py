"""Sizing one server on one accelerator with the legacy decode-only model: the largest arrival rate per replica
that meets the class's ITL, TTW and TPS targets, found by bisection, and the replicas and cost it takes
(docs/design/inferno.md §4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

import numpy as np
import numpy.typing as npt

from optimizer.queueing import (
    OUTCOMES,
    FloatArray,
    IndexArray,
    QueueBatch,
    QueueMetrics,
    StateDependentQueue,
    bisect_batch,
)
from optimizer.system import Accelerator, ModelTarget, PerfData, Server

SLO_PERCENTILE: Final = 0.95
SLO_MARGIN: Final = -math.log(1 - SLO_PERCENTILE)  # 2.995732...: mean wait bound for a 95th-percentile target
MAX_QUEUE_TO_BATCH_RATIO: Final = 10
RATE_RANGE_LOW: Final = 0.001  # lambda_min = 0.001 * mu_1
RATE_RANGE_HIGH: Final = 0.999  # lambda_max = 0.999 * mu_N
STABILITY_SAFETY_FRACTION: Final = 0.1  # a TPS target sizes for 0.9 * lambda_max
MS_PER_MINUTE: Final = 60_000.0


@dataclass(frozen=True, slots=True)
class ServiceProfile:
    """The queue parameters behind a candidate, so its metrics can be recomputed for fewer replicas."""

    alpha: float
    beta: float
    avg_length: int
    max_batch: int
    capacity: int

    def queue(self) -> StateDependentQueue:
        return StateDependentQueue(
            service_rates=legacy_service_rates(
                alpha=self.alpha, beta=self.beta, avg_length=self.avg_length, max_batch=self.max_batch
            ),
            capacity=self.capacity,
        )


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to serve one server: `num_replicas` replicas on accelerator `accelerator`.

    `value` is what the solvers minimise (the transition value of docs/design/inferno.md §5 once `optimize` sets it).
    Rates are requests/ms, times ms, costs cents/h; units are physical devices of type `acc_type`.
    """

    server: str
    accelerator: str
    acc_type: str
    units_per_replica: int
    cost_per_replica: float
    num_replicas: int
    max_batch: int
    cost: float
    value: float
    itl_average: float
    wait_average: float
    rho: float
    max_rate_per_replica: float
    demand: float
    profile: ServiceProfile | None = None

    @property
    def units(self) -> int:
        return self.num_replicas * self.units_per_replica

    @property
    def saturated(self) -> bool:
        """Demand above what the replicas can serve within the SLOs (informational)."""
        return self.demand > self.num_replicas * self.max_rate_per_replica


def legacy_service_rates(*, alpha: float, beta: float, avg_length: int, max_batch: int) -> list[float]:
    """mu_n = n / ((alpha + beta * n) * L) for n = 1..N, in requests/ms."""
    table = legacy_service_rate_table(
        alpha=np.array([alpha], dtype=np.float64),
        beta=np.array([beta], dtype=np.float64),
        avg_length=np.array([avg_length], dtype=np.float64),
        max_batch=max_batch,
    )
    rates: list[float] = table[0].tolist()
    return rates


def legacy_service_rate_table(
    *, alpha: FloatArray, beta: FloatArray, avg_length: FloatArray, max_batch: int
) -> FloatArray:
    """`legacy_service_rates` of several profiles of one batch size, one row each."""
    n = np.arange(1, max_batch + 1, dtype=np.float64)
    return n / ((alpha[:, np.newaxis] + beta[:, np.newaxis] * n) * avg_length[:, np.newaxis])


def batch_size(*, perf: PerfData, server: Server, avg_length: int) -> int:
    """N: the server's override, else the KV budget maxBatchSize * atTokens spread over L-token requests."""
    if server.max_batch_size > 0:
        return server.max_batch_size
    return max(perf.max_batch_size * perf.at_tokens // avg_length, 1)


def demand_rate(*, server: Server, target: ModelTarget) -> float:
    """Total demand in requests/ms: the arrival rate, or a TPS target converted to requests (it then wins)."""
    load = server.load
    if target.slo_tps > 0:
        return target.slo_tps / (1000.0 * load.avg_length)
    return load.arrival_rate / MS_PER_MINUTE


@dataclass(frozen=True, slots=True)
class SizingRequest:
    """One (server, accelerator) pair to size, with the class's targets for the server's model."""

    server: Server
    accelerator: Accelerator
    perf: PerfData
    target: ModelTarget


def size_candidate(
    *, server: Server, accelerator: Accelerator, perf: PerfData, target: ModelTarget
) -> Candidate | None:
    """The legacy sizing of docs/design/inferno.md §4 (zero load: step 7); None when no replica count meets the
    targets."""
    return size_candidates([SizingRequest(server=server, accelerator=accelerator, perf=perf, target=target)])[0]


def size_candidates(requests: Sequence[SizingRequest]) -> list[Candidate | None]:
    """`size_candidate` of every request, in order. All their queues are solved together."""
    results: list[Candidate | None] = [None] * len(requests)
    by_batch: dict[int, list[tuple[int, ServiceProfile]]] = {}
    for index, request in enumerate(requests):
        load = request.server.load
        if load.arrival_rate < 0 or load.avg_length < 0:
            continue
        if load.arrival_rate == 0 or load.avg_length == 0:
            results[index] = _idle_candidate(request)
            continue
        batch = batch_size(perf=request.perf, server=request.server, avg_length=load.avg_length)
        profile = ServiceProfile(
            alpha=request.perf.alpha,
            beta=request.perf.beta,
            avg_length=load.avg_length,
            max_batch=batch,
            capacity=MAX_QUEUE_TO_BATCH_RATIO * batch,
        )
        by_batch.setdefault(batch, []).append((index, profile))
    # One block of queues per batch size; the rows of the blocks, in order, are `loaded`.
    loaded = [member for members in by_batch.values() for member in members]
    sized = _size_loaded(
        [requests[index] for index, _ in loaded],
        [profile for _, profile in loaded],
        [[profile for _, profile in members] for members in by_batch.values()],
    )
    for (index, _), candidate in zip(loaded, sized, strict=True):
        results[index] = candidate
    return results


def _idle_candidate(request: SizingRequest) -> Candidate:
    """No traffic to size for: keep the minimum on this accelerator (the legacy optimizer always named it)."""
    server, perf = request.server, request.perf
    return _candidate(
        server=server,
        accelerator=request.accelerator,
        perf=perf,
        replicas=server.min_num_replicas,
        max_batch=server.max_batch_size if server.max_batch_size > 0 else perf.max_batch_size,
        itl=perf.alpha + perf.beta,
        wait=0.0,
        rho=0.0,
        max_rate=0.0,
        demand=0.0,
        profile=None,
    )


def _queue_blocks(blocks: Sequence[Sequence[ServiceProfile]]) -> list[tuple[FloatArray, npt.NDArray[np.int64]]]:
    """The service rate table and capacities of each block of profiles (all of one batch size)."""
    return [
        (
            legacy_service_rate_table(
                alpha=np.array([profile.alpha for profile in block], dtype=np.float64),
                beta=np.array([profile.beta for profile in block], dtype=np.float64),
                avg_length=np.array([profile.avg_length for profile in block], dtype=np.float64),
                max_batch=block[0].max_batch,
            ),
            np.array([profile.capacity for profile in block], dtype=np.int64),
        )
        for block in blocks
    ]


def _size_loaded(
    requests: Sequence[SizingRequest], profiles: Sequence[ServiceProfile], blocks: Sequence[Sequence[ServiceProfile]]
) -> list[Candidate | None]:
    """Size requests with traffic; `blocks` groups `profiles` (same order) by batch size."""
    tables = _queue_blocks(blocks)
    queues = QueueBatch(tables)
    rate_min = RATE_RANGE_LOW * np.concatenate([rates[:, 0] for rates, _ in tables]) if tables else np.zeros(0)
    rate_max = RATE_RANGE_HIGH * np.concatenate([rates[:, -1] for rates, _ in tables]) if tables else np.zeros(0)
    targets = [request.target for request in requests]
    best = _largest_rates_within_targets(
        queues, targets=targets, profiles=profiles, rate_min=rate_min, rate_max=rate_max
    )
    sized: list[tuple[int, float, float, int]] = []  # (row, best rate, demand, replicas)
    for row, (request, largest) in enumerate(zip(requests, best, strict=True)):
        if largest is None:
            continue
        rate = largest
        if request.target.slo_tps > 0:
            rate = min(rate, (1 - STABILITY_SAFETY_FRACTION) * float(rate_max[row]))
        demand = demand_rate(server=request.server, target=request.target)
        replicas = max(math.ceil(demand / rate), request.server.min_num_replicas)
        sized.append((row, rate, demand, replicas))
    metrics = queues.solve(
        np.array([demand / replicas for _, _, demand, replicas in sized], dtype=np.float64),
        rows=np.array([row for row, _, _, _ in sized], dtype=np.intp),
    )
    service_time, wait_time, idle = metrics.avg_service_time, metrics.avg_wait_time, metrics.idle_probability
    results: list[Candidate | None] = [None] * len(requests)
    for at, (row, rate, demand, replicas) in enumerate(sized):
        request, profile = requests[row], profiles[row]
        results[row] = _candidate(
            server=request.server,
            accelerator=request.accelerator,
            perf=request.perf,
            replicas=replicas,
            max_batch=profile.max_batch,
            itl=float(service_time[at]) / profile.avg_length,
            wait=float(wait_time[at]),
            rho=1.0 - float(idle[at]),
            max_rate=rate,
            demand=demand,
            profile=profile,
        )
    return results


def _largest_rates_within_targets(
    queues: QueueBatch,
    *,
    targets: Sequence[ModelTarget],
    profiles: Sequence[ServiceProfile],
    rate_min: FloatArray,
    rate_max: FloatArray,
) -> list[float | None]:
    """Per row, the largest arrival rate per replica meeting the ITL and TTW targets; None if even rate_min
    fails.

    Both the mean service time and the mean wait grow with the rate, so min(lambda_ITL, lambda_TTW) is the
    root of max(S / S*, W / W*) = 1: one bisection instead of upstream's two, half the queue solves.
    """
    itl = np.array([target.slo_itl for target in targets], dtype=np.float64)
    ttw = np.array([target.slo_ttw for target in targets], dtype=np.float64)
    length = np.array([profile.avg_length for profile in profiles], dtype=np.float64)
    searched = np.flatnonzero((itl > 0) | (ttw > 0))  # without targets a replica takes lambda_max

    every_itl, every_ttw = bool((itl > 0).all()), bool((ttw > 0).all())

    # Ratios are formed so that no divisor can underflow to 0 (a TTW of 1e-320 ms is "infeasible", not a crash).
    def worst_ratio(subset: IndexArray, rate: FloatArray) -> FloatArray:
        # While every row is still searching (most iterations), no row needs gathering.
        rows = None if len(subset) == queues.size else searched[subset]
        metrics = queues.solve(rate, rows=rows)
        picked = slice(None) if rows is None else rows
        row_itl, row_ttw = itl[picked], ttw[picked]
        service = metrics.avg_service_time / length[picked]
        wait = metrics.avg_wait_time * SLO_MARGIN
        # A ratio without its target is 0 (divided only where the target is set); a tiny target gives inf.
        with np.errstate(over="ignore"):
            if every_itl:
                itl_ratio = service / row_itl
            else:
                itl_ratio = np.divide(service, row_itl, out=np.zeros_like(rate), where=row_itl > 0)
            if every_ttw:
                wait_ratio = wait / row_ttw
            else:
                wait_ratio = np.divide(wait, row_ttw, out=np.zeros_like(rate), where=row_ttw > 0)
        return np.where(wait_ratio > itl_ratio, wait_ratio, itl_ratio)

    best: list[float | None] = rate_max.tolist()
    found = bisect_batch(worst_ratio, lo=rate_min[searched], hi=rate_max[searched], target=1.0)
    for row, outcome, x in zip(searched.tolist(), found.outcome.tolist(), found.x.tolist(), strict=True):
        if OUTCOMES[outcome] == "below":
            best[row] = None
        elif OUTCOMES[outcome] == "found":
            best[row] = x
    return best


def _candidate(
    *,
    server: Server,
    accelerator: Accelerator,
    perf: PerfData,
    replicas: int,
    max_batch: int,
    itl: float,
    wait: float,
    rho: float,
    max_rate: float,
    demand: float,
    profile: ServiceProfile | None,
) -> Candidate:
    acc_count = max(perf.acc_count, 1)  # the reference treated accCount <= 0 as 1
    cost_per_replica = accelerator.cost * acc_count
    cost = cost_per_replica * replicas
    return Candidate(
        server=server.name,
        accelerator=accelerator.name,
        acc_type=accelerator.type,
        units_per_replica=acc_count * accelerator.multiplicity,
        cost_per_replica=cost_per_replica,
        num_replicas=replicas,
        max_batch=max_batch,
        cost=cost,
        value=cost,
        itl_average=itl,
        wait_average=wait,
        rho=rho,
        max_rate_per_replica=max_rate,
        demand=demand,
        profile=profile,
    )


def rescale(candidate: Candidate, replicas: int) -> Candidate:
    """The candidate cut down to `replicas` (best-effort placement of a server that did not fit).

    Cost and value scale by replicas / num_replicas as upstream; unlike upstream, the ITL, wait and rho are
    recomputed for the heavier per-replica load, so a saturated allocation reports its real latency.
    """
    if replicas == candidate.num_replicas:
        return candidate
    if replicas <= 0 or candidate.num_replicas <= 0:
        raise ValueError(f"cannot rescale {candidate.num_replicas} replicas to {replicas}")
    factor = replicas / candidate.num_replicas
    scaled = replace(candidate, num_replicas=replicas, cost=candidate.cost * factor, value=candidate.value * factor)
    if candidate.profile is None or candidate.demand <= 0:
        return scaled
    metrics: QueueMetrics = candidate.profile.queue().solve(candidate.demand / replicas)
    return replace(
        scaled,
        itl_average=metrics.avg_service_time / candidate.profile.avg_length,
        wait_average=metrics.avg_wait_time,
        rho=metrics.rho,
    )


@dataclass(frozen=True, slots=True)
class GGmEstimate:
    num_replicas: int
    rho: float
    wait_average: float
    itl_average: float


def estimate_ggm(*, server: Server, perf: PerfData, target: ModelTarget) -> GGmEstimate | None:
    """The G/G/m-style approximation that reads the COVs (docs/design/inferno.md §4, last paragraph).

    Upstream shipped it but never called it; so do we: the optimizer sizes with `size_candidate`. Kept as a
    cheap cross-check and for callers that have measured arrival and service variability.
    """
    load = server.load
    if load.arrival_rate <= 0 or load.avg_length <= 0:
        return None
    length = load.avg_length
    batch = batch_size(perf=perf, server=server, avg_length=length)
    step = perf.alpha + perf.beta * batch  # ms per token at a full batch
    if target.slo_itl > 0 and step > target.slo_itl:
        return None
    variability = (load.arrival_cov**2 + load.service_cov**2) / 2
    replicas = 0
    if target.slo_itl > 0 and target.slo_ttw > 0:
        if variability > 0:
            x = batch * (target.slo_ttw / SLO_MARGIN) / (length * step * variability)
            rho_max = x / (1 + x)
        else:  # no variability, no queueing: the limit x -> infinity
            rho_max = 1.0
        rate = rho_max / (length * step)
        replicas = math.ceil(load.arrival_rate / (rate * MS_PER_MINUTE))
    if target.slo_tps > 0:
        tps_rate = target.slo_tps / (1000.0 * length)
        replicas = max(replicas, math.ceil(tps_rate / ((1 - STABILITY_SAFETY_FRACTION) * batch / (step * length))))
    if replicas <= 0:
        return None
    rho = load.arrival_rate * length * step / (replicas * MS_PER_MINUTE)
    if variability == 0:
        wait = 0.0
    elif rho >= 1:
        wait = math.inf
    else:
        wait = length * step * variability * (rho / (1 - rho)) / batch
    return GGmEstimate(num_replicas=replicas, rho=rho, wait_average=wait, itl_average=step)
