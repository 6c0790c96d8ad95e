"""Sizing one server on one accelerator: the legacy decode-only model (docs/design/inferno.md §4).

A replica runs batches of up to N requests; at concurrency n every request gets one token each
alpha + beta * n ms, so a request of L tokens completes at the state-dependent rate
mu_n = n / ((alpha + beta * n) * L) requests/ms, and at most K = 10 * N requests are held (legacy: K counts
the batch too). The largest arrival rate per replica that meets the class's targets is found by bisection:

- ITL: mean service time S(lambda) <= L * ITL* (the mean time per token is S / L);
- TTW: mean wait W(lambda) <= TTW* / 2.9957 (= -ln 0.05: with an exponential wait, a mean that low keeps the
  95th percentile under TTW*);
- TPS: 0.9 * lambda_max (a stability margin).

Replicas = max(ceil(demand / lambda*), minNumReplicas); cost = accelerator cost * accCount * replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final

from optimizer.queueing import QueueMetrics, StateDependentQueue, bisect
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

    `value` is what the solvers minimise (the transition value of docs/design/inferno.md §5 once the engine sets it).
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
    return [n / ((alpha + beta * n) * avg_length) for n in range(1, max_batch + 1)]


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


def size_candidate(
    *, server: Server, accelerator: Accelerator, perf: PerfData, target: ModelTarget
) -> Candidate | None:
    """The legacy sizing of docs/design/inferno.md §4 (zero load: step 7).

    None when no replica count meets the targets.
    """
    load = server.load
    if load.arrival_rate < 0 or load.avg_length < 0:
        return None
    if load.arrival_rate == 0 or load.avg_length == 0:
        # No traffic to size for: keep the minimum on this accelerator (the legacy optimizer always named it).
        return _candidate(
            server=server,
            accelerator=accelerator,
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

    length = load.avg_length
    batch = batch_size(perf=perf, server=server, avg_length=length)
    profile = ServiceProfile(
        alpha=perf.alpha,
        beta=perf.beta,
        avg_length=length,
        max_batch=batch,
        capacity=MAX_QUEUE_TO_BATCH_RATIO * batch,
    )
    queue = profile.queue()
    rate_min = RATE_RANGE_LOW * queue.service_rate(1)
    rate_max = RATE_RANGE_HIGH * queue.service_rate(batch)

    best = _largest_rate_within_targets(queue, target=target, length=length, rate_min=rate_min, rate_max=rate_max)
    if best is None:
        return None
    if target.slo_tps > 0:
        best = min(best, (1 - STABILITY_SAFETY_FRACTION) * rate_max)

    demand = demand_rate(server=server, target=target)
    replicas = max(math.ceil(demand / best), server.min_num_replicas)
    metrics = queue.solve(demand / replicas)
    return _candidate(
        server=server,
        accelerator=accelerator,
        perf=perf,
        replicas=replicas,
        max_batch=batch,
        itl=metrics.avg_service_time / length,
        wait=metrics.avg_wait_time,
        rho=metrics.rho,
        max_rate=best,
        demand=demand,
        profile=profile,
    )


def _largest_rate_within_targets(
    queue: StateDependentQueue, *, target: ModelTarget, length: int, rate_min: float, rate_max: float
) -> float | None:
    """The largest arrival rate per replica meeting the ITL and TTW targets; None if even rate_min fails.

    Both the mean service time and the mean wait grow with the rate, so min(lambda_ITL, lambda_TTW) is the
    root of max(S / S*, W / W*) = 1: one bisection instead of upstream's two, half the queue solves.
    """
    itl, ttw = target.slo_itl, target.slo_ttw
    if itl <= 0 and ttw <= 0:
        return rate_max

    # Ratios are formed so that no divisor can underflow to 0 (a TTW of 1e-320 ms is "infeasible", not a crash).
    def worst_ratio(rate: float) -> float:
        metrics = queue.solve(rate)
        itl_ratio = metrics.avg_service_time / length / itl if itl > 0 else 0.0
        wait_ratio = metrics.avg_wait_time * SLO_MARGIN / ttw if ttw > 0 else 0.0
        return max(itl_ratio, wait_ratio)

    found = bisect(worst_ratio, lo=rate_min, hi=rate_max, target=1.0)
    if found.outcome == "below":
        return None
    return rate_max if found.outcome == "above" else found.x


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
