"""A de-duplicating, rate-limited work queue with per-key exclusivity (client-go's workqueue semantics).

Invariants, which the controller relies on:
- a key is queued at most once: N adds before it is picked up collapse into one reconcile;
- a key is never handed to two workers at once: an add while it is being processed marks it dirty, and it
  is queued again when the worker calls `done`;
- `add_after` keeps only the earliest pending deadline per key;
- `add_rate_limited` asks the rate limiter how long to wait (exponential per key, bucket overall) and
  `forget` resets the key's history after a success.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from reconciler.runtime.ratelimit import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)


class QueueShutDown(Exception):
    """get() on a queue that was shut down."""


@dataclass
class QueueObserver:
    """Hooks for metrics; each is optional so that unit tests can build a bare queue."""

    on_depth: Callable[[int], None] | None = None
    on_add: Callable[[], None] | None = None
    on_retry: Callable[[], None] | None = None
    on_queue_latency: Callable[[float], None] | None = None
    on_work_duration: Callable[[float], None] | None = None


class WorkQueue(Generic[T]):
    def __init__(
        self,
        *,
        rate_limiter: RateLimiter | None = None,
        observer: QueueObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate_limiter = rate_limiter if rate_limiter is not None else default_controller_rate_limiter()
        self._observer = observer if observer is not None else QueueObserver()
        self._clock = clock
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: dict[T, float] = {}
        self._added_at: dict[T, float] = {}
        self._waiting: dict[T, tuple[float, asyncio.TimerHandle]] = {}
        self._not_empty = asyncio.Event()
        self._shutting_down = False

    # ----------------------------------------------------------------- adding
    def add(self, item: T) -> None:
        if self._shutting_down:
            return
        waiting = self._waiting.pop(item, None)
        if waiting is not None:
            waiting[1].cancel()
        if item in self._dirty:
            return
        if self._observer.on_add:
            self._observer.on_add()
        self._dirty.add(item)
        self._added_at.setdefault(item, self._clock())
        if item in self._processing:
            return
        self._queue.append(item)
        self._report_depth()
        self._not_empty.set()

    def add_after(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        existing = self._waiting.get(item)
        if existing is not None:
            if existing[0] <= deadline:
                return
            existing[1].cancel()
        handle = loop.call_at(deadline, self._fire, item)
        self._waiting[item] = (deadline, handle)

    def _fire(self, item: T) -> None:
        self._waiting.pop(item, None)
        self.add(item)

    def add_rate_limited(self, item: T) -> None:
        if self._observer.on_retry:
            self._observer.on_retry()
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: T) -> None:
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)

    # --------------------------------------------------------------- taking
    async def get(self) -> T:
        """The next key; raises QueueShutDown once the queue is shut down, even if keys are left: at shutdown
        only in-flight work is finished, and the next leader reconciles everything anyway."""
        while not self._queue or self._shutting_down:
            if self._shutting_down:
                raise QueueShutDown
            self._not_empty.clear()
            await self._not_empty.wait()
        item = self._queue.popleft()
        now = self._clock()
        self._processing[item] = now
        self._dirty.discard(item)
        added = self._added_at.pop(item, None)
        if added is not None and self._observer.on_queue_latency:
            self._observer.on_queue_latency(now - added)
        self._report_depth()
        return item

    def done(self, item: T) -> None:
        started = self._processing.pop(item, None)
        if started is not None and self._observer.on_work_duration:
            self._observer.on_work_duration(self._clock() - started)
        if item in self._dirty and not self._shutting_down:
            self._queue.append(item)
            self._report_depth()
            self._not_empty.set()

    # ------------------------------------------------------------ lifecycle
    def shutdown(self) -> None:
        self._shutting_down = True
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        self._not_empty.set()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        return len(self._queue)

    def processing(self) -> frozenset[T]:
        return frozenset(self._processing)

    def _report_depth(self) -> None:
        if self._observer.on_depth:
            self._observer.on_depth(len(self._queue))
