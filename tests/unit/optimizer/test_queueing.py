"""The state-dependent queue against textbook queues, and bisection.

Expected values are derived by hand from the birth-death balance equations or the classic closed forms
(M/M/1, M/M/1/K, M/M/2), never from the implementation.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.queueing import QueueBatch, StateDependentQueue, bisect, bisect_batch


def test_mm1_with_a_deep_buffer_is_the_textbook_mm1() -> None:
    # mu = 2, lambda = 1, rho = 0.5; a buffer of 2000 makes blocking ~0.5^2000 = 0.
    metrics = StateDependentQueue(service_rates=[2.0], capacity=2000).solve(1.0)
    assert metrics.idle_probability == pytest.approx(0.5, rel=1e-12)  # 1 - rho
    assert metrics.avg_in_system == pytest.approx(1.0, rel=1e-12)  # rho / (1 - rho)
    assert metrics.avg_response_time == pytest.approx(1.0, rel=1e-12)  # 1 / (mu - lambda)
    assert metrics.avg_wait_time == pytest.approx(0.5, rel=1e-12)  # rho / (mu - lambda)
    assert metrics.avg_service_time == pytest.approx(0.5, rel=1e-12)  # 1 / mu
    assert metrics.avg_in_service == pytest.approx(0.5, rel=1e-12)  # P(busy)
    assert metrics.throughput == pytest.approx(1.0, rel=1e-12)
    assert metrics.blocking_probability < 1e-300
    assert metrics.rho == pytest.approx(0.5, rel=1e-12)


def test_mm1k_at_rho_one_has_a_uniform_distribution() -> None:
    # lambda = mu = 1, K = 4: p_n = 1/5 for n = 0..4 (this is the flat-tail series path).
    metrics = StateDependentQueue(service_rates=[1.0], capacity=4).solve(1.0)
    assert metrics.idle_probability == pytest.approx(0.2, rel=1e-12)
    assert metrics.blocking_probability == pytest.approx(0.2, rel=1e-12)
    assert metrics.avg_in_system == pytest.approx(2.0, rel=1e-12)  # (0+1+2+3+4)/5
    assert metrics.throughput == pytest.approx(0.8, rel=1e-12)  # lambda (1 - p_K)
    assert metrics.avg_response_time == pytest.approx(2.5, rel=1e-12)  # L / X
    assert metrics.avg_service_time == pytest.approx(1.0, rel=1e-12)  # (1 - p0) / X = 1 / mu
    assert metrics.avg_wait_time == pytest.approx(1.5, rel=1e-12)


def test_small_mm1k_by_hand() -> None:
    # lambda = 1, mu = 2, K = 3: p ~ 1, 1/2, 1/4, 1/8 (sum 15/8) -> p0 = 8/15, p3 = 1/15, L = 11/15,
    # X = 14/15, T = 11/14, S = 1/2, W = 2/7.
    metrics = StateDependentQueue(service_rates=[2.0], capacity=3).solve(1.0)
    assert metrics.idle_probability == pytest.approx(8 / 15, rel=1e-12)
    assert metrics.blocking_probability == pytest.approx(1 / 15, rel=1e-12)
    assert metrics.avg_in_system == pytest.approx(11 / 15, rel=1e-12)
    assert metrics.throughput == pytest.approx(14 / 15, rel=1e-12)
    assert metrics.avg_response_time == pytest.approx(11 / 14, rel=1e-12)
    assert metrics.avg_service_time == pytest.approx(1 / 2, rel=1e-12)
    assert metrics.avg_wait_time == pytest.approx(2 / 7, rel=1e-12)


@pytest.mark.parametrize(("rho", "capacity"), [(0.5, 10), (0.9, 10), (1.3, 10), (0.999, 190)])
def test_batch_of_one_is_mm1k(rho: float, capacity: int) -> None:
    # The legacy model with N = 1 (a batch of one): M/M/1/K with the closed form
    # L = rho/(1-rho) - (K+1) rho^(K+1) / (1 - rho^(K+1)), p_K = rho^K (1-rho) / (1 - rho^(K+1)).
    mu = 1 / 300.0
    metrics = StateDependentQueue(service_rates=[mu], capacity=capacity).solve(rho * mu)
    k = capacity
    expected_l = rho / (1 - rho) - (k + 1) * rho ** (k + 1) / (1 - rho ** (k + 1))
    expected_pk = rho**k * (1 - rho) / (1 - rho ** (k + 1))
    assert metrics.avg_in_system == pytest.approx(expected_l, rel=1e-9)
    assert metrics.blocking_probability == pytest.approx(expected_pk, rel=1e-9)
    assert metrics.throughput == pytest.approx(rho * mu * (1 - expected_pk), rel=1e-9)


def test_two_servers_is_erlang_c() -> None:
    # M/M/2 with mu = 1 per server, lambda = 1 (rate of state n is min(n, 2) * mu): p0 = 1/3, Lq = 1/3,
    # Wq = Lq / lambda = 1/3, L = Lq + lambda/mu = 4/3, mean service 1/mu = 1.
    metrics = StateDependentQueue(service_rates=[1.0, 2.0], capacity=3000).solve(1.0)
    assert metrics.idle_probability == pytest.approx(1 / 3, rel=1e-12)
    assert metrics.avg_in_queue == pytest.approx(1 / 3, rel=1e-12)
    assert metrics.avg_wait_time == pytest.approx(1 / 3, rel=1e-12)
    assert metrics.avg_in_system == pytest.approx(4 / 3, rel=1e-12)
    assert metrics.avg_service_time == pytest.approx(1.0, rel=1e-12)


def test_zero_arrivals_give_the_light_load_limits() -> None:
    queue = StateDependentQueue(service_rates=[0.5, 0.8], capacity=20)
    metrics = queue.solve(0.0)
    assert metrics.idle_probability == 1.0
    assert metrics.throughput == 0.0
    assert metrics.avg_wait_time == 0.0
    assert metrics.avg_service_time == 2.0  # a lone request is served at mu_1
    tiny = queue.solve(1e-9)
    assert tiny.avg_service_time == pytest.approx(2.0, rel=1e-6)


def test_large_batches_do_not_overflow() -> None:
    # N = 1024 with rates growing like n: the plain products overflow float64; log space must not.
    rates = [n / (10.0 + 0.01 * n) for n in range(1, 1025)]
    queue = StateDependentQueue(service_rates=rates, capacity=10 * 1024)
    for load in (1e-6, 1.0, 0.999 * rates[-1], 5 * rates[-1]):
        metrics = queue.solve(load)
        values = [metrics.avg_in_system, metrics.avg_wait_time, metrics.avg_service_time, metrics.throughput]
        assert all(math.isfinite(v) and v >= 0 for v in values)
        assert 0.0 <= metrics.blocking_probability <= 1.0
    # Far beyond saturation nearly every slot is full and throughput is the top service rate.
    overloaded = queue.solve(50 * rates[-1])
    assert overloaded.throughput == pytest.approx(rates[-1], rel=1e-9)


@pytest.mark.parametrize(
    ("rates", "capacity", "message"),
    [([], 5, "at least one"), ([1.0, 0.0], 5, "finite and > 0"), ([1.0, 2.0], 1, "below the batch size")],
)
def test_bad_queue_parameters_are_rejected(rates: list[float], capacity: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StateDependentQueue(service_rates=rates, capacity=capacity)


def test_negative_arrival_rate_is_rejected() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        StateDependentQueue(service_rates=[1.0], capacity=3).solve(-1.0)


def test_a_batch_solves_each_queue_as_it_would_alone() -> None:
    # Three blocks (batch sizes 1, 3 and 300), a zero arrival rate, a queue without tail states, and a
    # subset of rows: every figure is bit for bit the one-queue figure.
    large = [n / ((12.0 + 0.28 * n) * 256) for n in range(1, 301)]
    blocks = [
        (np.array([[2.0], [0.5]]), np.array([2000, 4])),
        (np.array([[1.0, 1.5, 1.8], [0.2, 0.3, 0.35]]), np.array([3, 30])),
        (np.array([large]), np.array([3000])),
    ]
    alone = [
        StateDependentQueue(service_rates=rates.tolist(), capacity=int(capacity))
        for table, capacities in blocks
        for rates, capacity in zip(table, capacities, strict=True)
    ]
    batch = QueueBatch(blocks)
    arrivals = np.array([1.0, 0.0, 2.5, 0.1, 0.9 * large[-1]])
    for rows in (None, np.array([0, 2, 3]), np.array([1, 4])):
        picked = arrivals if rows is None else arrivals[rows]
        metrics = batch.solve(picked, rows=rows)
        for at, row in enumerate(range(len(alone)) if rows is None else rows.tolist()):
            assert metrics.row(at) == alone[row].solve(float(picked[at]))


def test_batch_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="one capacity per queue"):
        QueueBatch([(np.array([[1.0], [2.0]]), np.array([5]))])
    with pytest.raises(ValueError, match="ascending"):
        QueueBatch([(np.array([[1.0], [2.0]]), np.array([5, 5]))]).solve(np.array([1.0, 1.0]), rows=np.array([1, 0]))
    with pytest.raises(ValueError, match=">= 0"):
        QueueBatch([(np.array([[1.0]]), np.array([5]))]).solve(np.array([math.nan]))


@settings(max_examples=60, deadline=None)
@given(
    alpha=st.floats(1.0, 50.0),
    beta=st.floats(0.0, 2.0),
    batch=st.integers(1, 64),
    fractions=st.tuples(st.floats(0.001, 0.999), st.floats(0.001, 0.999)),
)
def test_wait_and_service_time_never_fall_as_load_rises(
    alpha: float, beta: float, batch: int, fractions: tuple[float, float]
) -> None:
    rates = [n / (alpha + beta * n) for n in range(1, batch + 1)]
    queue = StateDependentQueue(service_rates=rates, capacity=10 * batch)
    low, high = sorted(fractions)
    at_low, at_high = queue.solve(low * rates[-1]), queue.solve(high * rates[-1])
    assert at_high.avg_wait_time >= at_low.avg_wait_time * (1 - 1e-9)
    assert at_high.avg_service_time >= at_low.avg_service_time * (1 - 1e-9)


# --- bisection -------------------------------------------------------------------------------------------


def test_bisection_finds_a_root_within_the_tolerance() -> None:
    found = bisect(lambda x: x * x, lo=0.0, hi=4.0, target=2.0, rtol=1e-12)
    assert found.outcome == "found"
    assert found.x == pytest.approx(math.sqrt(2), rel=1e-9)
    assert found.iterations < 100


def test_a_loose_tolerance_stops_early() -> None:
    tight = bisect(lambda x: x * x, lo=0.0, hi=4.0, target=2.0, rtol=1e-12)
    loose = bisect(lambda x: x * x, lo=0.0, hi=4.0, target=2.0, rtol=1e-2)
    assert loose.iterations < tight.iterations
    assert abs(loose.x**2 - 2.0) <= 0.02


def test_target_outside_the_range_is_reported() -> None:
    below = bisect(lambda x: x, lo=1.0, hi=2.0, target=0.5)
    above = bisect(lambda x: x, lo=1.0, hi=2.0, target=3.0)
    assert (below.outcome, below.x) == ("below", 1.0)
    assert (above.outcome, above.x) == ("above", 2.0)


def test_decreasing_functions_are_handled() -> None:
    found = bisect(lambda x: 10 - x, lo=0.0, hi=10.0, target=2.5, rtol=1e-12)
    assert found.outcome == "found"
    assert found.x == pytest.approx(7.5, rel=1e-9)
    below = bisect(lambda x: 10 - x, lo=0.0, hi=10.0, target=-1.0)
    assert (below.outcome, below.x) == ("below", 10.0)


def test_an_end_that_matches_is_returned_at_once() -> None:
    calls: list[float] = []

    def f(x: float) -> float:
        calls.append(x)
        return x

    found = bisect(f, lo=1.0, hi=2.0, target=2.0)
    assert (found.outcome, found.x, found.iterations) == ("found", 2.0, 0)
    assert calls == [1.0, 2.0]


def test_without_an_exact_hit_the_result_stays_on_the_safe_side() -> None:
    # A step function never hits 0.5 exactly: the answer is the last x with f(x) <= target.
    found = bisect(lambda x: 0.0 if x < 1.0 else 1.0, lo=0.0, hi=3.0, target=0.5)
    assert found.x < 1.0
    assert found.x == pytest.approx(1.0, rel=1e-9)


def test_empty_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty interval"):
        bisect(lambda x: x, lo=2.0, hi=1.0, target=1.5)


def test_lock_step_bisection_takes_each_function_s_own_steps() -> None:
    # Rows that hit the target at an end, lie outside the range, decrease, or need many halvings.
    functions = [lambda x: x * x, lambda x: 10 - x, lambda x: x, lambda x: x + 5, lambda x: x**3, lambda x: 2.0]
    lo = np.array([0.0, 0.0, 2.0, 1.0, -2.0, 0.0])
    hi = np.array([4.0, 10.0, 3.0, 2.0, 3.0, 1.0])
    target = 2.0

    def rows_of(rows: npt.NDArray[np.intp], points: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.array([functions[row](point) for row, point in zip(rows.tolist(), points.tolist(), strict=True)])

    together = bisect_batch(rows_of, lo=lo, hi=hi, target=target, rtol=1e-12)
    alone = [
        bisect(f, lo=float(lo[row]), hi=float(hi[row]), target=target, rtol=1e-12) for row, f in enumerate(functions)
    ]
    assert [together.row(row) for row in range(len(functions))] == alone
    assert [result.outcome for result in alone] == ["found", "found", "found", "below", "found", "found"]
