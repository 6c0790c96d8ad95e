"""Rate limiters: client-go's default controller limiter numbers (5 ms doubling to 1000 s; 10 qps, burst 100)."""

from __future__ import annotations

import pytest

from reconciler.runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialBackoff,
    TokenBucket,
    default_controller_rate_limiter,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_exponential_backoff_doubles_per_item_from_5ms() -> None:
    limiter = ItemExponentialBackoff(base_delay=0.005, max_delay=1000.0)
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert limiter.when("b") == 0.005  # items are independent
    assert limiter.num_requeues("a") == 4


def test_exponential_backoff_caps_at_max_and_never_overflows() -> None:
    limiter = ItemExponentialBackoff(base_delay=0.005, max_delay=1000.0)
    delays = [limiter.when("a") for _ in range(300)]
    assert delays[17] == 655.36  # 0.005 * 2**17
    assert delays[18] == 1000.0
    assert delays[-1] == 1000.0


def test_forget_resets_the_backoff() -> None:
    limiter = ItemExponentialBackoff(base_delay=1.0, max_delay=10.0)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 1.0


def test_backoff_rejects_nonsense_bounds() -> None:
    with pytest.raises(ValueError, match="base_delay"):
        ItemExponentialBackoff(base_delay=0, max_delay=1)


def test_token_bucket_allows_a_burst_then_spaces_reservations_by_1_over_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    clock.now += 1.0  # refills 10 tokens, capped at the burst, minus the two reserved
    assert bucket.reserve() == 0.0


def test_token_bucket_with_zero_qps_is_unlimited() -> None:
    bucket = TokenBucket(qps=0, burst=0)
    assert all(bucket.reserve() == 0.0 for _ in range(1000))


def test_default_controller_limiter_is_max_of_backoff_and_bucket() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    # Within the burst of 100, the per-item backoff dominates.
    assert limiter.when("a") == 0.005
    assert limiter.when("a") == 0.01
    # 98 more distinct failures exhaust the bucket; the next retry waits for a token (1/10 s).
    for i in range(98):
        limiter.when(f"x{i}")
    assert limiter.when("b") == pytest.approx(0.1)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_bucket_limiter_does_not_track_items() -> None:
    limiter = BucketRateLimiter(qps=1, burst=1, clock=FakeClock())
    limiter.when("a")
    assert limiter.num_requeues("a") == 0
