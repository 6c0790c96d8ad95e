"""The state-dependent M/M/1/K queue of one inference replica, and bisection (docs/design/inferno.md §3, §7):
float64 in log space with a closed-form tail, written once for many queues at once (`QueueBatch`,
`bisect_batch`) because sizing a fleet is thousands of bisections; `StateDependentQueue` and `bisect` are
the one-queue views of the same code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]

# Below |m * log r| < this the geometric tail is nearly flat and its closed form would cancel; use the series.
_FLAT_TAIL: Final = 1e-5

DEFAULT_RTOL: Final = 1e-9
DEFAULT_XTOL: Final = 1e-10
DEFAULT_MAX_ITERATIONS: Final = 200


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


class QueueArrays:
    """`QueueMetrics` of several rows at once, one array element per row. The metrics are derived when read
    (a bisection reads two of them, thousands of times); idle rows (no arrivals) read as the lambda -> 0
    limits: a lone request is served at mu_1 and never waits."""

    __slots__ = (
        "_first_weight",
        "_idle",
        "_in_queue",
        "_in_service",
        "_log_blocking",
        "_single",
        "_throughput",
        "_total",
        "arrival_rate",
    )

    def __init__(
        self,
        *,
        arrival_rate: FloatArray,
        throughput: FloatArray,
        in_service: FloatArray,
        in_queue: FloatArray,
        first_weight: FloatArray,
        log_blocking: FloatArray,
        total: FloatArray,
        idle: npt.NDArray[np.bool_] | None,
        single_service_time: FloatArray,
    ) -> None:
        """`in_service`, `in_queue` and `first_weight` unnormalised (divided by `total` when read); on idle
        rows every array but `arrival_rate` holds finite placeholders."""
        self.arrival_rate = arrival_rate
        self._throughput = throughput
        self._in_service = in_service / total
        self._in_queue = in_queue / total
        self._first_weight = first_weight
        self._log_blocking = log_blocking  # log of the weight of state K, on the scale of `total`
        self._total = total
        self._idle = idle
        self._single = single_service_time

    def _limit(self, value: FloatArray, at_idle: float | FloatArray) -> FloatArray:
        return value if self._idle is None else np.where(self._idle, at_idle, value)

    @property
    def throughput(self) -> FloatArray:
        return self._limit(self._throughput, 0.0)

    @property
    def idle_probability(self) -> FloatArray:
        return self._limit(self._first_weight / self._total, 1.0)

    @property
    def blocking_probability(self) -> FloatArray:
        return self._limit(np.exp(self._log_blocking) / self._total, 0.0)

    @property
    def avg_in_system(self) -> FloatArray:
        return self._limit(self._in_service + self._in_queue, 0.0)

    @property
    def avg_in_service(self) -> FloatArray:
        return self._limit(self._in_service, 0.0)

    @property
    def avg_in_queue(self) -> FloatArray:
        return self._limit(self._in_queue, 0.0)

    @property
    def avg_response_time(self) -> FloatArray:
        return self._limit((self._in_service + self._in_queue) / self._throughput, self._single)

    @property
    def avg_service_time(self) -> FloatArray:
        return self._limit(self._in_service / self._throughput, self._single)

    @property
    def avg_wait_time(self) -> FloatArray:
        return self._limit(self._in_queue / self._throughput, 0.0)

    def row(self, index: int) -> QueueMetrics:
        return QueueMetrics(
            arrival_rate=float(self.arrival_rate[index]),
            throughput=float(self.throughput[index]),
            idle_probability=float(self.idle_probability[index]),
            blocking_probability=float(self.blocking_probability[index]),
            avg_in_system=float(self.avg_in_system[index]),
            avg_in_service=float(self.avg_in_service[index]),
            avg_in_queue=float(self.avg_in_queue[index]),
            avg_response_time=float(self.avg_response_time[index]),
            avg_service_time=float(self.avg_service_time[index]),
            avg_wait_time=float(self.avg_wait_time[index]),
        )


@dataclass(frozen=True, slots=True)
class _Block:
    """Queues of one batch size N, rows `start` to `start + size` of a QueueBatch."""

    start: int
    size: int
    log_prefix: FloatArray  # (size, N + 1): log of prod_{i<=n} mu_i, n = 0..N
    indices: FloatArray  # 0..N


class QueueBatch:
    """Many queues solved together. Each block is a table of departure rates (one row per queue, N columns:
    mu_1..mu_N of that queue) and each queue's capacity K; the rows of all blocks, in order, are the queues.

    The head of the chain (states 0..N) is evaluated per block, everything else once for all rows; sizing
    passes one block per batch size, so a solve costs a few dozen numpy calls however many queues it holds.
    """

    __slots__ = ("_batch", "_blocks", "_first_rate", "_log_prefix_at_batch", "_log_top_rate", "_starts", "_tail_states")

    def __init__(self, blocks: Sequence[tuple[FloatArray, npt.NDArray[np.int64]]]) -> None:
        self._blocks: list[_Block] = []
        batch, log_prefix_at_batch, log_top_rate, first_rate, tail_states = [], [], [], [], []
        start = 0
        for service_rates, capacities in blocks:
            rates = np.asarray(service_rates, dtype=np.float64)
            if rates.ndim != 2 or rates.shape[1] == 0:
                raise ValueError("a queue needs at least one service rate")
            if not np.all((rates > 0) & np.isfinite(rates)):
                raise ValueError(f"service rates must be finite and > 0, got {rates.tolist()!r}")
            size, n = rates.shape
            capacity = np.asarray(capacities, dtype=np.int64)
            if capacity.shape != (size,):
                raise ValueError(f"one capacity per queue: {capacity.shape} for {size} queues")
            if np.any(capacity < n):
                raise ValueError(f"capacity {int(capacity.min())} is below the batch size {n}")
            log_rates = np.log(rates)
            # log of prod_{i<=n} mu_i for n = 0..N: the head of the chain is lambda^n / prod mu_i.
            log_prefix = np.zeros((size, n + 1))
            np.cumsum(log_rates, axis=1, out=log_prefix[:, 1:])
            self._blocks.append(
                _Block(start=start, size=size, log_prefix=log_prefix, indices=np.arange(n + 1, dtype=np.float64))
            )
            start += size
            batch.append(np.full(size, float(n)))
            log_prefix_at_batch.append(log_prefix[:, n])
            log_top_rate.append(log_rates[:, -1])
            first_rate.append(rates[:, 0])
            tail_states.append((capacity - n).astype(np.float64))
        self._starts = np.array([block.start for block in self._blocks] + [start], dtype=np.intp)
        self._batch = np.concatenate(batch) if batch else np.zeros(0)
        self._log_prefix_at_batch = np.concatenate(log_prefix_at_batch) if batch else np.zeros(0)
        self._log_top_rate = np.concatenate(log_top_rate) if batch else np.zeros(0)
        self._first_rate = np.concatenate(first_rate) if batch else np.zeros(0)
        self._tail_states = np.concatenate(tail_states) if batch else np.zeros(0)

    @property
    def size(self) -> int:
        return len(self._batch)

    def solve(self, arrival_rates: FloatArray, *, rows: IndexArray | None = None) -> QueueArrays:
        """The steady state of each queue at its arrival rate (>= 0): of every queue, or of `rows` (ascending)."""
        arrival = np.asarray(arrival_rates, dtype=np.float64)
        if arrival.size:
            lowest = float(arrival.min())
            if not (lowest >= 0 and math.isfinite(float(arrival.max()))):
                raise ValueError(f"arrival rate must be finite and >= 0, got {arrival.tolist()!r}")
        else:
            lowest = 1.0
        if rows is not None and rows.size > 1 and not np.all(rows[1:] > rows[:-1]):
            raise ValueError("rows must be ascending")
        idle = (arrival == 0) if lowest == 0 else None
        # Idle rows read as limits (QueueArrays); any positive rate keeps their arithmetic here finite.
        offered = arrival if idle is None else np.where(idle, 1.0, arrival)
        picked = slice(None) if rows is None else rows
        batch, tail_states = self._batch[picked], self._tail_states[picked]
        log_rate = np.log(offered)
        log_ratio = log_rate - self._log_top_rate[picked]  # log(lambda / mu_N): the tail is geometric in it
        # log of the unnormalised p_N; the states above N are p_N * r^j, j = 1..K-N.
        log_at_batch = batch * log_rate - self._log_prefix_at_batch[picked]
        log_last = log_at_batch + tail_states * log_ratio  # state K
        head = self._heads(log_rate, floor=log_last, rows=rows)
        top = head.top
        log_tail_sum, mean_excess = _geometric_tail(log_ratio, tail_states)
        tail_mass = np.exp(log_at_batch + log_tail_sum - top)
        log_below_last, _ = _geometric_tail(log_ratio, tail_states - 1, with_mean=False)
        if tail_states.min(initial=1) > 0:
            mass_below_last = head.mass + np.exp(log_at_batch + log_below_last - top)
        else:
            mass_below_last = np.where(
                tail_states > 0, head.mass + np.exp(log_at_batch + log_below_last - top), head.mass - head.last_weight
            )
        total = head.mass + tail_mass
        return QueueArrays(
            arrival_rate=arrival,
            throughput=offered * mass_below_last / total,
            in_service=head.in_service + batch * tail_mass,
            in_queue=tail_mass * mean_excess,
            first_weight=head.first_weight,
            log_blocking=log_last - top,
            total=total,
            idle=idle,
            single_service_time=1.0 / self._first_rate[picked],
        )

    def _heads(self, log_rate: FloatArray, *, floor: FloatArray, rows: IndexArray | None) -> _Heads:
        """Per row, sums over states 0..N of lambda^n / prod mu_i, scaled by e^-top with top >= every log
        term and >= floor; block by block."""
        heads = _Heads(
            top=np.empty_like(log_rate),
            mass=np.empty_like(log_rate),
            in_service=np.empty_like(log_rate),
            first_weight=np.empty_like(log_rate),
            last_weight=np.empty_like(log_rate),
        )
        # Where each block's rows begin among the rows asked for.
        cuts = self._starts if rows is None else np.searchsorted(rows, self._starts)
        for block, begin, end in zip(self._blocks, cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            if begin == end:
                continue
            if rows is None or end - begin == block.size:
                log_prefix = block.log_prefix
            else:
                log_prefix = block.log_prefix[rows[begin:end] - block.start]
            logs = np.multiply.outer(log_rate[begin:end], block.indices)
            logs -= log_prefix
            top = np.maximum(logs.max(axis=1), floor[begin:end])
            logs -= top[:, np.newaxis]
            weights = np.exp(logs, out=logs)
            heads.top[begin:end] = top
            # All terms are positive, so a plain sum is accurate to about N ulps.
            heads.mass[begin:end] = weights.sum(axis=1)
            heads.in_service[begin:end] = (weights * block.indices).sum(axis=1)
            heads.first_weight[begin:end] = weights[:, 0]
            heads.last_weight[begin:end] = weights[:, -1]
        return heads


@dataclass(frozen=True, slots=True)
class _Heads:
    top: FloatArray
    mass: FloatArray
    in_service: FloatArray
    first_weight: FloatArray
    last_weight: FloatArray


class StateDependentQueue:
    """Birth-death chain on 0..capacity with departure rates service_rates[min(n, N) - 1]."""

    __slots__ = ("_capacity", "_queues", "_rates")

    def __init__(self, *, service_rates: Sequence[float], capacity: int) -> None:
        if not service_rates:
            raise ValueError("a queue needs at least one service rate")
        self._rates = tuple(float(rate) for rate in service_rates)
        self._capacity = capacity
        self._queues = QueueBatch([(np.array([self._rates], dtype=np.float64), np.array([capacity], dtype=np.int64))])

    @property
    def max_batch(self) -> int:
        return len(self._rates)

    @property
    def capacity(self) -> int:
        return self._capacity

    def solve(self, arrival_rate: float) -> QueueMetrics:
        if not (arrival_rate >= 0 and math.isfinite(arrival_rate)):
            raise ValueError(f"arrival rate must be finite and >= 0, got {arrival_rate!r}")
        return self._queues.solve(np.array([arrival_rate], dtype=np.float64)).row(0)


def _geometric_tail(
    log_ratio: FloatArray, count: FloatArray, *, with_mean: bool = True
) -> tuple[FloatArray, FloatArray]:
    """For weights r^j, j = 1..count (per row): log of their sum, and the mean of j under them (zeros unless
    `with_mean`).

    Written with expm1 so that neither r -> 0, r -> 1 nor r >> 1 overflows or cancels. Each row is computed
    in the one form that suits it; with `count <= 0` there are no weights (log sum -inf, mean 0).
    """
    x = count * log_ratio
    if count.size and count.min() > 0 and x.max() <= -_FLAT_TAIL:  # the usual case: every row falls, none flat
        return _falling_tail(log_ratio, count, x, with_mean=with_mean)
    flat = np.abs(x) < _FLAT_TAIL
    falling = log_ratio < 0
    some = count > 0
    log_sum = np.full_like(log_ratio, -np.inf)
    mean = np.zeros_like(log_ratio)
    for form, rows in (
        (_flat_tail, some & flat),
        (_falling_tail, some & ~flat & falling),
        (_rising_tail, some & ~flat & ~falling),
    ):
        if rows.any():
            log_sum[rows], mean[rows] = form(log_ratio[rows], count[rows], x[rows], with_mean=with_mean)
    return log_sum, mean


def _flat_tail(a: FloatArray, count: FloatArray, x: FloatArray, *, with_mean: bool) -> tuple[FloatArray, FloatArray]:
    """|x| tiny: cumulant expansion of a uniform j on 1..count tilted by e^{a j}."""
    mean = (count + 1) / 2
    variance = (count * count - 1) / 12
    log_sum = np.log(count) + a * mean + a * a * variance / 2
    return log_sum, (mean + a * variance) if with_mean else np.zeros_like(a)


def _falling_tail(a: FloatArray, count: FloatArray, x: FloatArray, *, with_mean: bool) -> tuple[FloatArray, FloatArray]:
    """r < 1."""
    expm1_a, expm1_x = np.expm1(a), np.expm1(x)
    log_sum = a + np.log(expm1_x / expm1_a)
    if not with_mean:
        return log_sum, np.zeros_like(a)
    return log_sum, 1.0 + np.exp(a) / -expm1_a - count * np.exp(x) / -expm1_x


def _rising_tail(a: FloatArray, count: FloatArray, x: FloatArray, *, with_mean: bool) -> tuple[FloatArray, FloatArray]:
    """r >= 1."""
    log_sum = x + np.log(-np.expm1(-x)) - np.log(-np.expm1(-a))
    if not with_mean:
        return log_sum, np.zeros_like(a)
    return log_sum, 1.0 + 1.0 / np.expm1(-a) - count / np.expm1(-x)


Outcome = Literal["found", "below", "above"]
OUTCOMES: Final[tuple[Outcome, ...]] = ("found", "below", "above")
_FOUND, _BELOW, _ABOVE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class BisectionResult:
    """`found`: f(x) is within the tolerance of the target, or x is the last point with f(x) on the target's
    side; `below`/`above`: the target is below/above every value of f on the interval, and x is the end
    nearest to it."""

    x: float
    outcome: Outcome
    iterations: int


@dataclass(frozen=True, slots=True)
class BisectionArrays:
    """`BisectionResult` per row; `outcome` holds indices into OUTCOMES."""

    x: FloatArray
    outcome: npt.NDArray[np.int8]
    iterations: npt.NDArray[np.int64]

    def row(self, index: int) -> BisectionResult:
        return BisectionResult(
            x=float(self.x[index]), outcome=OUTCOMES[self.outcome[index]], iterations=int(self.iterations[index])
        )


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
    """Find x in [lo, hi] with f(x) = target for a monotone f (`bisect_batch` with one row)."""

    def one_row(_rows: IndexArray, points: FloatArray) -> FloatArray:
        return np.array([f(float(point)) for point in points], dtype=np.float64)

    found = bisect_batch(
        one_row,
        lo=np.array([lo], dtype=np.float64),
        hi=np.array([hi], dtype=np.float64),
        target=target,
        rtol=rtol,
        xtol=xtol,
        max_iterations=max_iterations,
    )
    return found.row(0)


def bisect_batch(
    f: Callable[[IndexArray, FloatArray], FloatArray],
    *,
    lo: FloatArray,
    hi: FloatArray,
    target: float,
    rtol: float = DEFAULT_RTOL,
    xtol: float = DEFAULT_XTOL,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> BisectionArrays:
    """Find x[i] in [lo[i], hi[i]] with f_i(x[i]) = target for monotone functions f_i, all in lock step.

    `f(rows, points)` evaluates f_rows[k] at points[k]; each call passes only the rows still searching.

    Row by row: stops when |f(x) - target| <= rtol * |target| or when the bracket is narrower than xtol
    relative to its upper end. Upstream's relative test had a precedence bug and ran 100 float32 halvings;
    this one has a real tolerance. Without an exact hit it returns the bracket end whose f is on the target's
    "<=" side, so an SLO computed from it is never exceeded by more than the tolerance.
    """
    lo = np.array(lo, dtype=np.float64)
    hi = np.array(hi, dtype=np.float64)
    if not np.all(lo <= hi):
        bad = int(np.flatnonzero(~(lo <= hi))[0])
        raise ValueError(f"empty interval [{lo[bad]!r}, {hi[bad]!r}]")
    count = len(lo)
    everything = np.arange(count)
    f_lo, f_hi = f(everything, lo), f(everything, hi)
    tolerance = rtol * abs(target)
    x = np.empty(count)
    outcome = np.full(count, _FOUND, dtype=np.int8)
    iterations = np.zeros(count, dtype=np.int64)
    increasing = f_hi >= f_lo
    at_lo = np.abs(f_lo - target) <= tolerance
    at_hi = ~at_lo & (np.abs(f_hi - target) <= tolerance)
    below = ~at_lo & ~at_hi & (target < np.where(increasing, f_lo, f_hi))
    above = ~at_lo & ~at_hi & ~below & (target > np.where(increasing, f_hi, f_lo))
    x[at_lo], x[at_hi] = lo[at_lo], hi[at_hi]
    x[below] = np.where(increasing, lo, hi)[below]  # the end where f is smallest
    x[above] = np.where(increasing, hi, lo)[above]
    outcome[below], outcome[above] = _BELOW, _ABOVE
    # The rows still searching, and their brackets, kept compact: finished rows drop out.
    active = np.flatnonzero(~(at_lo | at_hi | below | above))
    lo, hi, rising = lo[active], hi[active], increasing[active]
    for iteration in range(1, max_iterations + 1):
        if not active.size:
            break
        mid = (lo + hi) / 2
        value = f(active, mid)
        hit = np.abs(value - target) <= tolerance
        move_lo = (value < target) == rising
        lo = np.where(move_lo, mid, lo)
        hi = np.where(move_lo, hi, mid)
        narrow = hi - lo <= xtol * np.maximum(np.abs(lo), np.abs(hi))
        finished = hit | narrow
        if finished.any():
            narrow &= ~hit
            x[active[hit]] = mid[hit]
            x[active[narrow]] = np.where(rising, lo, hi)[narrow]
            iterations[active[finished]] = iteration
            going = ~finished
            active, lo, hi, rising = active[going], lo[going], hi[going], rising[going]
    x[active] = np.where(rising, lo, hi)
    iterations[active] = max_iterations
    return BisectionArrays(x=x, outcome=outcome, iterations=iterations)
