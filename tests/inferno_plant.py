"""What vLLM replicas would report, under the queueing model with their TRUE performance: the plant that the
fake vLLM pods of the real-Prometheus tests and the autoscaler benchmark (bench/autoscaler_bench.py) serve.

The true alpha/beta may differ from the profile the optimiser is given — that difference is what the guardrail
and the online estimator exist for. One replica at an arrival rate is the birth–death chain of
docs/design/inferno.md §3 with the true parameters (the optimiser's own queue code, so the plant and the
model agree exactly when the profile is right): mean inter-token latency S/L, mean wait, requests running
(in the batch) and waiting, and the KV-cache usage as the batch's share of the KV budget (a request in the
batch holds its whole length, so a full batch is a full cache). Overload shows as it does on a real server:
the queue fills to its limit, the wait grows to K/mu_N, and requests beyond it are refused (blocking).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from optimizer.queueing import StateDependentQueue
from optimizer.sizing import MAX_QUEUE_TO_BATCH_RATIO, MS_PER_MINUTE, SLO_MARGIN, legacy_service_rates


@dataclass(frozen=True)
class Truth:
    """How a replica really performs: a token every alpha + beta * n ms at batch n, at most `batch` at once."""

    alpha: float
    beta: float
    batch: int


@dataclass(frozen=True)
class Observed:
    """Totals over the replicas that run (waiting, running), means per request (itl, wait, ttft, in ms)."""

    replicas: int
    itl: float
    wait: float
    ttft: float
    running: float
    waiting: float
    kv_cache: float
    blocking: float
    served_rpm: float

    @property
    def running_per_replica(self) -> float:
        return self.running / self.replicas if self.replicas else 0.0

    def violates(self, *, slo_itl: float, slo_ttw: float) -> bool:
        """The SLOs as the optimiser sizes for them: mean ITL, and a mean wait whose exponential 95th percentile
        stays under TTW; refused requests (more than 1 %) violate too."""
        return self.itl > slo_itl or self.wait * SLO_MARGIN > slo_ttw or self.blocking > 0.01


@lru_cache(maxsize=4096)
def _queue(alpha: float, beta: float, length: int, batch: int) -> StateDependentQueue:
    return StateDependentQueue(
        service_rates=legacy_service_rates(alpha=alpha, beta=beta, avg_length=length, max_batch=batch),
        capacity=MAX_QUEUE_TO_BATCH_RATIO * batch,
    )


def serve(*, truth: Truth, rate_rpm: float, length: int, replicas: int) -> Observed:
    """The steady state of `replicas` replicas sharing `rate_rpm` requests/min of `length` tokens evenly."""
    if replicas <= 0 or rate_rpm <= 0 or length <= 0:
        idle_itl = truth.alpha + truth.beta
        waiting = 0.0 if replicas > 0 or rate_rpm <= 0 else rate_rpm  # no replica: everything waits
        return Observed(max(replicas, 0), idle_itl, 0.0, idle_itl, 0.0, waiting, 0.0, 0.0 if replicas else 1.0, 0.0)
    metrics = _queue(truth.alpha, truth.beta, length, truth.batch).solve(rate_rpm / replicas / MS_PER_MINUTE)
    itl = metrics.avg_service_time / length
    in_service = metrics.avg_in_service
    return Observed(
        replicas=replicas,
        itl=itl,
        wait=metrics.avg_wait_time,
        ttft=metrics.avg_wait_time + truth.alpha + truth.beta * in_service,
        running=in_service * replicas,
        waiting=metrics.avg_in_queue * replicas,
        kv_cache=min(in_service / truth.batch, 1.0),
        blocking=metrics.blocking_probability,
        served_rpm=metrics.throughput * MS_PER_MINUTE * replicas,
    )
