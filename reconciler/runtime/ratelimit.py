"""Rate limiters: per-item exponential backoff, a token bucket, and the max of several.

These mirror client-go's workqueue limiters because users know their behaviour: the default controller
limiter is the maximum of a per-item exponential backoff (5 ms doubling up to 1000 s) and an overall token
bucket (10 per second, burst 100) that caps how fast *retries* can hit the API server when many objects fail
at once. `when(item)` answers "how long until this item may be retried" and records the attempt.

The token bucket is also used, asynchronously, as the client-side QPS limit of the API client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import Protocol

from process.backoff import backoff_delay

Clock = Callable[[], float]


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds to wait before `item` may be processed again; counts as one more failure of it."""

    def forget(self, item: Hashable) -> None:
        """The item succeeded: reset its history."""

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialBackoff:
    """base * 2**failures, capped at max_delay, tracked per item."""

    def __init__(self, *, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError(f"backoff needs 0 < base_delay <= max_delay, got {base_delay} and {max_delay}")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        return backoff_delay(failures + 1, base=self.base_delay, cap=self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class TokenBucket:
    """A token bucket with reservations: each call takes a token now or reserves a future one.

    `qps <= 0` means unlimited.
    """

    def __init__(self, *, qps: float, burst: int, clock: Clock = time.monotonic) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"a token bucket with qps {qps} needs burst >= 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take one token; return how many seconds the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)


class BucketRateLimiter:
    """The overall limiter of the default controller rate limiter: items share one bucket."""

    def __init__(self, *, qps: float = 10.0, burst: int = 100, clock: Clock = time.monotonic) -> None:
        self._bucket = TokenBucket(qps=qps, burst=burst, clock=clock)

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # Every limiter must record the attempt, so no short-circuit.
        return max([limiter.when(item) for limiter in self._limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(
    *,
    base_delay: float = 0.005,
    max_delay: float = 1000.0,
    qps: float = 10.0,
    burst: int = 100,
    clock: Clock = time.monotonic,
) -> MaxOfRateLimiter:
    return MaxOfRateLimiter(
        ItemExponentialBackoff(base_delay=base_delay, max_delay=max_delay),
        BucketRateLimiter(qps=qps, burst=burst, clock=clock),
    )
