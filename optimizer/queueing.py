"""The state-dependent M/M/1/K queue of one inference replica, and bisection (docs/design/inferno.md §3, §7).

A replica with n requests in the system (n = 0..K) serves min(n, N) of them as one batch and completes
requests at the state-dependent rate mu_min(n,N); arrivals at n = K are blocked. This is a birth-death chain:
p_{n+1} = p_n * lambda / mu_min(n+1,N).

Everything is float64 (upstream used float32). The chain is evaluated in log space, because for batch sizes in
the hundreds the products overflow, and the states above N (where the departure rate is constant) are summed
in closed form, so one solve costs O(N) rather than O(K). Queue length and wait come from the tail directly
rather than as T - S, which upstream computed in float32 and got cancellation noise of a few microseconds.
"""

from __future__ import annotations

import importlib
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

# Below |m * log r| < this the geometric tail is nearly flat and its closed form would cancel; use the series.
_FLAT_TAIL: Final = 1e-5

DEFAULT_RTOL: Final = 1e-9
DEFAULT_XTOL: Final = 1e-10
DEFAULT_MAX_ITERATIONS: Final = 200

# From this batch size on the head of the chain is evaluated with numpy when it is installed (it comes with
# the 'milp' extra): about 20x faster at N = 800, while below ~64 states plain Python is as fast.
VECTORIZE_FROM_BATCH: Final = 64
_numpy: Any
try:
    _numpy = importlib.import_module("numpy")
except ImportError:  # pragma: no cover - depends on the installation
    _numpy = None


@dataclass(frozen=True, slots=True)
class QueueMetrics:
    """Steady state of the chain at one offered arrival rate. Rates in requests/ms, times in ms."""

    arrival_rate: float
    throughput: float
    idle_probability: float
    blocking_probability: float
    avg_in_system: float
    avg_in_service: float
    avg_in_queue: float
    avg_response_time: float
    avg_service_time: float
    avg_wait_time: float

    @property
    def rho(self) -> float:
        """Utilisation as the legacy optimizer reports it: the probability the replica is busy."""
        return 1.0 - self.idle_probability


class StateDependentQueue:
    """Birth-death chain on 0..capacity with departure rates service_rates[min(n, N) - 1]."""

    __slots__ = ("_capacity", "_indices", "_log_prefix", "_log_top_rate", "_rates", "_vector_indices", "_vector_prefix")

    def __init__(self, *, service_rates: Sequence[float], capacity: int, vectorize: bool | None = None) -> None:
        """`vectorize`: None picks numpy for large batches when it is installed; False forces plain Python."""
        if not service_rates:
            raise ValueError("a queue needs at least one service rate")
        if any(not (rate > 0 and math.isfinite(rate)) for rate in service_rates):
            raise ValueError(f"service rates must be finite and > 0, got {list(service_rates)!r}")
        if capacity < len(service_rates):
            raise ValueError(f"capacity {capacity} is below the batch size {len(service_rates)}")
        self._rates = tuple(float(rate) for rate in service_rates)
        self._capacity = capacity
        prefix = [0.0]
        for rate in self._rates:
            prefix.append(prefix[-1] + math.log(rate))
        # log of prod_{i<=n} mu_i for n = 0..N: the head of the chain is lambda^n / prod mu_i.
        self._log_prefix = tuple(prefix)
        self._indices = range(len(prefix))
        self._log_top_rate = math.log(self._rates[-1])
        if vectorize is None:
            vectorize = _numpy is not None and len(self._rates) >= VECTORIZE_FROM_BATCH
        if vectorize and _numpy is None:
            raise ValueError("vectorize=True needs numpy, which is not installed")
        self._vector_prefix: Any = _numpy.array(prefix, dtype=float) if vectorize else None
        self._vector_indices: Any = _numpy.arange(len(prefix), dtype=float) if vectorize else None

    @property
    def max_batch(self) -> int:
        return len(self._rates)

    @property
    def capacity(self) -> int:
        return self._capacity

    def service_rate(self, n: int) -> float:
        """mu_n for n >= 1 (constant above the batch size)."""
        return self._rates[min(n, len(self._rates)) - 1]

    def solve(self, arrival_rate: float) -> QueueMetrics:
        if not (arrival_rate >= 0 and math.isfinite(arrival_rate)):
            raise ValueError(f"arrival rate must be finite and >= 0, got {arrival_rate!r}")
        if arrival_rate == 0:
            return self._empty()
        batch = len(self._rates)
        tail_states = self._capacity - batch
        log_rate = math.log(arrival_rate)
        log_ratio = log_rate - self._log_top_rate  # log(lambda / mu_N): the tail is geometric in it
        # log of the unnormalised p_N; the states above N are p_N * r^j, j = 1..K-N.
        log_at_batch = batch * log_rate - self._log_prefix[batch]
        log_last = log_at_batch + tail_states * log_ratio  # state K
        head = self._head(log_rate, floor=log_last)
        top = head.top

        if tail_states > 0:
            log_tail_sum, mean_excess = _geometric_tail(log_ratio, tail_states)
            tail_mass = math.exp(log_at_batch + log_tail_sum - top)
            log_below_last, _ = _geometric_tail(log_ratio, tail_states - 1)
            mass_below_last = head.mass + math.exp(log_at_batch + log_below_last - top)
        else:
            tail_mass = mean_excess = 0.0
            mass_below_last = head.mass - head.last_weight
        total = head.mass + tail_mass
        in_service = head.in_service + batch * tail_mass
        in_queue = tail_mass * mean_excess
        throughput = arrival_rate * mass_below_last / total
        avg_in_service = in_service / total
        avg_in_queue = in_queue / total
        return QueueMetrics(
            arrival_rate=arrival_rate,
            throughput=throughput,
            idle_probability=head.first_weight / total,
            blocking_probability=math.exp(log_last - top) / total,
            avg_in_system=avg_in_service + avg_in_queue,
            avg_in_service=avg_in_service,
            avg_in_queue=avg_in_queue,
            avg_response_time=(avg_in_service + avg_in_queue) / throughput,
            avg_service_time=avg_in_service / throughput,
            avg_wait_time=avg_in_queue / throughput,
        )

    def _head(self, log_rate: float, *, floor: float) -> _Head:
        """Sums over states 0..N of lambda^n / prod mu_i, scaled by e^-top with top >= every log term."""
        if self._vector_prefix is not None:
            logs = self._vector_indices * log_rate - self._vector_prefix
            top = max(float(logs.max()), floor)
            weights = _numpy.exp(logs - top)
            return _Head(
                top=top,
                mass=float(weights.sum()),
                in_service=float(self._vector_indices @ weights),
                first_weight=float(weights[0]),
                last_weight=float(weights[-1]),
            )
        logs = [n * log_rate - c for n, c in zip(self._indices, self._log_prefix, strict=True)]
        top = max(logs)
        top = max(top, floor)
        scaled = [math.exp(x - top) for x in logs]
        # All terms are positive, so a plain sum is accurate to about N ulps.
        return _Head(
            top=top,
            mass=sum(scaled),
            in_service=sum(map(operator.mul, self._indices, scaled)),
            first_weight=scaled[0],
            last_weight=scaled[-1],
        )

    def _empty(self) -> QueueMetrics:
        # The lambda -> 0 limits: a lone request is served at mu_1 and never waits.
        single = 1.0 / self._rates[0]
        return QueueMetrics(
            arrival_rate=0.0,
            throughput=0.0,
            idle_probability=1.0,
            blocking_probability=0.0,
            avg_in_system=0.0,
            avg_in_service=0.0,
            avg_in_queue=0.0,
            avg_response_time=single,
            avg_service_time=single,
            avg_wait_time=0.0,
        )


@dataclass(frozen=True, slots=True)
class _Head:
    top: float
    mass: float
    in_service: float
    first_weight: float
    last_weight: float


def _geometric_tail(log_ratio: float, count: int) -> tuple[float, float]:
    """For weights r^j, j = 1..count: log of their sum, and the mean of j under them.

    Written with expm1 so that neither r -> 0, r -> 1 nor r >> 1 overflows or cancels.
    """
    if count <= 0:
        return -math.inf, 0.0
    a = log_ratio
    x = count * a
    if abs(x) < _FLAT_TAIL:
        # Cumulant expansion of a uniform j on 1..count tilted by e^{a j}.
        mean = (count + 1) / 2
        variance = (count * count - 1) / 12
        return math.log(count) + a * mean + a * a * variance / 2, mean + a * variance
    if a < 0:
        log_sum = a + math.log(math.expm1(x) / math.expm1(a))
        mean = 1.0 + math.exp(a) / -math.expm1(a) - count * math.exp(x) / -math.expm1(x)
    else:
        log_sum = x + math.log(-math.expm1(-x)) - math.log(-math.expm1(-a))
        mean = 1.0 + 1.0 / math.expm1(-a) - count / math.expm1(-x)
    return log_sum, mean


@dataclass(frozen=True, slots=True)
class BisectionResult:
    """`found`: f(x) is within the tolerance of the target, or x is the last point with f(x) on the target's
    side; `below`/`above`: the target is below/above every value of f on the interval, and x is the end
    nearest to it."""

    x: float
    outcome: Literal["found", "below", "above"]
    iterations: int


def bisect(
    f: Callable[[float], float],
    *,
    lo: float,
    hi: float,
    target: float,
    rtol: float = DEFAULT_RTOL,
    xtol: float = DEFAULT_XTOL,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> BisectionResult:
    """Find x in [lo, hi] with f(x) = target for a monotone f.

    Stops when |f(x) - target| <= rtol * |target| or when the bracket is narrower than xtol relative to its
    upper end. Upstream's relative test had a precedence bug and ran 100 float32 halvings; this one has a
    real tolerance (docs/design/inferno.md §7). Without an exact hit it returns the bracket end whose f is on the
    target's "<=" side, so an SLO computed from it is never exceeded by more than the tolerance.
    """
    if not lo <= hi:
        raise ValueError(f"empty interval [{lo!r}, {hi!r}]")
    f_lo, f_hi = f(lo), f(hi)
    tolerance = rtol * abs(target)
    if abs(f_lo - target) <= tolerance:
        return BisectionResult(x=lo, outcome="found", iterations=0)
    if abs(f_hi - target) <= tolerance:
        return BisectionResult(x=hi, outcome="found", iterations=0)
    increasing = f_hi >= f_lo
    smallest, largest = (f_lo, f_hi) if increasing else (f_hi, f_lo)
    if target < smallest:
        return BisectionResult(x=lo if increasing else hi, outcome="below", iterations=0)
    if target > largest:
        return BisectionResult(x=hi if increasing else lo, outcome="above", iterations=0)
    for iteration in range(1, max_iterations + 1):
        mid = (lo + hi) / 2
        value = f(mid)
        if abs(value - target) <= tolerance:
            return BisectionResult(x=mid, outcome="found", iterations=iteration)
        if (value < target) == increasing:
            lo = mid
        else:
            hi = mid
        if hi - lo <= xtol * max(abs(lo), abs(hi)):
            return BisectionResult(x=lo if increasing else hi, outcome="found", iterations=iteration)
    return BisectionResult(x=lo if increasing else hi, outcome="found", iterations=max_iterations)
