"""How close a Server's replicas are to saturation, from what its engines report (docs/design/inferno.md §14).

The queueing model predicts; these signals observe. Per Server, three instant queries through the same bounded
Prometheus client and templates as the load (reconciler.inferno.load), over the Server's pods, in the forms of
the engine that serves them (shared/engines/<engine>/series.py):
- KV-cache usage, the mean over pods (0..1): vLLM's `vllm:kv_cache_usage_perc`, which vLLM 0.10 renamed from
  `vllm:gpu_cache_usage_perc` (the default query asks for either: `or` keeps one sample per pod, the newer
  name first, so one query serves both generations); SGLang's `sglang:token_usage`;
- requests waiting (`vllm:num_requests_waiting`, `sglang:num_queue_reqs`) and running
  (`vllm:num_requests_running`, `sglang:num_running_reqs`), summed over pods.

Thresholds come from the Server's `spec.saturation`, else its ServiceClass's, else the defaults: a mean KV-cache
usage of 0.8 (vLLM preempts requests when the cache is full; 20 % is the headroom one more batch of long
prompts takes) and 5 waiting requests per replica (a queue that a replica's next few iterations do not absorb:
llm-d's workload-variant-autoscaler uses the same two defaults).

The pressure is the larger of the two ratios to their thresholds: 1 is saturated. Spread over another
replica count n, the same work gives pressure × current / n — the projection a scale-down is checked against.
Everything here is pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from shared.api.inferno import SaturationSpec
from shared.engines.series import default_series

DEFAULT_KV_CACHE_THRESHOLD: Final = 0.8
DEFAULT_WAITING_PER_REPLICA: Final = 5.0

# vLLM's forms; a target served by another engine reads that engine's (reconciler.inferno.signals).
DEFAULT_KV_CACHE_QUERY: Final = default_series().queries.kv_cache
DEFAULT_WAITING_QUERY: Final = default_series().queries.waiting
DEFAULT_RUNNING_QUERY: Final = default_series().queries.running


@dataclass(frozen=True)
class Thresholds:
    """When a Server counts as saturated; validated where they are read (shared/api/inferno.py)."""

    kv_cache: float = DEFAULT_KV_CACHE_THRESHOLD  # mean KV-cache usage, (0, 1]
    waiting_per_replica: float = DEFAULT_WAITING_PER_REPLICA  # waiting requests per replica, > 0

    def __post_init__(self) -> None:
        if not 0 < self.kv_cache <= 1:
            raise ValueError(f"kvCacheUsage threshold must be in (0, 1], got {self.kv_cache}")
        if not self.waiting_per_replica > 0:
            raise ValueError(f"waitingPerReplica threshold must be > 0, got {self.waiting_per_replica}")


@dataclass(frozen=True)
class Signals:
    """One period's observation of a Server's pods; None: that signal had no number this period."""

    kv_cache: float | None  # mean over pods, 0..1
    waiting: float | None  # total over pods
    running: float | None  # total over pods

    @property
    def complete(self) -> bool:
        return self.kv_cache is not None and self.waiting is not None


@dataclass(frozen=True)
class Assessment:
    """How saturated a Server is at `replicas` replicas, and why."""

    replicas: int
    pressure: float  # max of the signals over their thresholds; >= 1 is saturated
    kv_ratio: float
    waiting_ratio: float

    @property
    def saturated(self) -> bool:
        return self.pressure >= 1.0

    def pressure_at(self, replicas: int) -> float:
        """The pressure if the same work were spread over `replicas` (0 replicas: infinitely saturated if there
        is any work)."""
        if replicas <= 0:
            return math.inf if self.pressure > 0 else 0.0
        return self.pressure * self.replicas / replicas

    def fewest_replicas_below(self, limit: float) -> int:
        """The fewest replicas whose projected pressure stays at or under `limit` (> 0)."""
        if self.pressure <= 0:
            return 0
        needed = math.ceil(self.pressure * self.replicas / limit - 1e-9)
        return max(needed, 1)

    def explain(self) -> str:
        return (
            f"KV cache at {self.kv_ratio:.0%} of its threshold, waiting requests at {self.waiting_ratio:.0%} of "
            f"theirs, over {self.replicas} replicas"
        )


def assess(signals: Signals, thresholds: Thresholds, *, replicas: int) -> Assessment | None:
    """The pressure of `signals` observed over `replicas` replicas, or None when a signal is missing (the
    guardrail then does nothing rather than guess)."""
    if signals.kv_cache is None or signals.waiting is None:
        return None
    kv = min(max(signals.kv_cache, 0.0), 1.0)
    waiting = max(signals.waiting, 0.0)
    per_replica = waiting / replicas if replicas > 0 else waiting
    kv_ratio = kv / thresholds.kv_cache
    waiting_ratio = per_replica / thresholds.waiting_per_replica
    return Assessment(
        replicas=max(replicas, 0),
        pressure=max(kv_ratio, waiting_ratio),
        kv_ratio=kv_ratio,
        waiting_ratio=waiting_ratio,
    )


def thresholds_for(server: SaturationSpec | None, service_class: SaturationSpec | None) -> Thresholds | None:
    """The Server's thresholds, field by field its own, else its ServiceClass's, else the defaults; None when
    either turned the guard off (the Server's word wins)."""
    guard = next((spec.guard for spec in (server, service_class) if spec is not None and spec.guard is not None), True)
    if not guard:
        return None
    kv = next(
        (s.kv_cache_usage for s in (server, service_class) if s is not None and s.kv_cache_usage is not None), None
    )
    waiting = next(
        (s.waiting_per_replica for s in (server, service_class) if s is not None and s.waiting_per_replica is not None),
        None,
    )
    return Thresholds(
        kv_cache=DEFAULT_KV_CACHE_THRESHOLD if kv is None else kv,
        waiting_per_replica=DEFAULT_WAITING_PER_REPLICA if waiting is None else waiting,
    )
