"""A generic level-based controller: watched kinds → keys → one queue → N workers → reconcile(key).

The contract is controller-runtime's. `reconcile(key)` receives only the key and reads current state from
informer caches; it returns a `Result` (done, or requeue after N seconds), raises `TerminalError` for an error
that retrying cannot fix (counted, not retried), or raises anything else to be retried with per-key
exponential backoff. Nothing here knows about ModelBooster: the Inferno controller is a second `Controller`
with its own kinds, key mapping and reconcile function.

Workers run only while the process leads (the manager starts and stops them); event handlers and the queue
run all the time so that a new leader starts with a full queue and warm caches.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from reconciler.runtime.client import ApiError
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.metrics import Metrics
from reconciler.runtime.objects import metadata
from reconciler.runtime.outage import OutageLog, is_outage
from reconciler.runtime.queue import QueueObserver, QueueShutDown, WorkQueue
from reconciler.runtime.ratelimit import RateLimiter
from reconciler.runtime.source import EventType, KeyMapper, ObjectKey, Source, map_to_self

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None


class TerminalError(Exception):
    """An error that a retry cannot fix (e.g. an invalid spec): reported, counted, not requeued."""


Reconcile = Callable[[ObjectKey], Awaitable[Result]]


def map_to_controller_owner(owner: Kind) -> KeyMapper:
    """Enqueue the controlling owner of a child, if it is of kind `owner` (same namespace by Kubernetes rules)."""

    def mapper(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[ObjectKey]:
        keys: set[ObjectKey] = set()
        for obj in (old, new):
            if obj is None:
                continue
            meta = metadata(obj)
            for ref in meta.get("ownerReferences") or ():
                if ref.get("controller") and ref.get("kind") == owner.kind and _group_of(ref) == owner.group:
                    keys.add(ObjectKey(meta.get("namespace") or "", ref.get("name") or ""))
        return keys

    return mapper


def _group_of(ref: dict[str, Any]) -> str:
    api_version = str(ref.get("apiVersion") or "")
    return api_version.rpartition("/")[0]


class Controller:
    def __init__(
        self,
        *,
        name: str,
        reconcile: Reconcile,
        workers: int,
        rate_limiter: RateLimiter,
        metrics: Metrics,
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be >= 1, got {workers}")
        self.name = name
        self._reconcile = reconcile
        self.workers = workers
        self._metrics = metrics
        labels = {"name": name, "controller": name}
        self.queue: WorkQueue[ObjectKey] = WorkQueue(
            rate_limiter=rate_limiter,
            observer=QueueObserver(
                on_depth=metrics.queue_depth.labels(**labels).set,
                on_add=metrics.queue_adds.labels(**labels).inc,
                on_retry=metrics.queue_retries.labels(**labels).inc,
                on_queue_latency=metrics.queue_duration.labels(**labels).observe,
                on_work_duration=metrics.work_duration.labels(**labels).observe,
            ),
        )
        self._sources: list[Source] = []
        self._primary: Informer | None = None
        # Reconciles failing because the API server is unavailable: one line per outage, not one per retry; and
        # the keys that failed so, retried at once when the server answers again (a watched informer reaches it,
        # or a reconcile succeeds), instead of each waiting out the backoff it built up during the outage
        # (seconds to minutes after a long one).
        self._outage = OutageLog(logger, f"{name}: reconciling")
        self._outage_keys: set[ObjectKey] = set()
        metrics.init_controller(name, workers)

    # ---------------------------------------------------------------- wiring
    def watch(self, source: Source, mapper: KeyMapper = map_to_self, *, primary: bool = False) -> None:
        """Feed this controller from `source` (runtime/source.py); the workers start once every source has
        synced. The primary source, an informer, is the one whose every object is re-enqueued on resync and when
        leadership starts."""
        if source in self._sources:
            return
        self._sources.append(source)
        source.attach(self, mapper)
        if primary:
            if not isinstance(source, Informer):
                raise TypeError(f"controller {self.name}: the primary source must be an informer")
            self._primary = source

    async def wait_synced(self) -> None:
        await asyncio.gather(*(source.wait_synced() for source in self._sources))

    def enqueue(self, key: ObjectKey) -> None:
        self.queue.add(key)

    def enqueue_all(self) -> None:
        """Level-based restart and resync: every object of the primary kind gets a reconcile."""
        if self._primary is None:
            return
        for obj in self._primary.objects():
            self.queue.add(ObjectKey.of(obj))

    @property
    def sources(self) -> list[Source]:
        return list(self._sources)

    # ---------------------------------------------------------------- running
    async def run_workers(self) -> None:
        """Run the workers until cancelled (leadership lost or shutdown), once this controller's caches have
        synced: a controller whose kinds are not installed (say, an optional CRD) holds up no other controller."""
        await self.wait_synced()
        self.enqueue_all()
        tasks = [asyncio.create_task(self._worker(i), name=f"{self.name}-worker-{i}") for i in range(self.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def run_resync(self, period: float) -> None:
        if period <= 0:
            return
        while True:
            await asyncio.sleep(period)
            self.enqueue_all()

    def server_answers(self) -> None:
        """The API server answers again (a reconcile succeeded, or a watched informer reached it): the keys that
        failed for the outage are retried now instead of after the backoff they built up meanwhile."""
        waiting, self._outage_keys = self._outage_keys, set()
        for key in waiting:
            self.queue.add(key)

    async def _worker(self, index: int) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.process(key)
            finally:
                self.queue.done(key)

    async def process(self, key: ObjectKey) -> None:
        """One reconcile of `key` with the queue bookkeeping of controller-runtime's reconcileHandler."""
        reconcile_id = uuid.uuid4().hex[:12]
        active = self._metrics.active_workers.labels(controller=self.name)
        active.inc()
        started = time.monotonic()
        result_label = "success"
        try:
            result = await self._reconcile(key)
        except asyncio.CancelledError:
            # Leadership lost or shutting down mid-reconcile: the key must be picked up again by whoever
            # reconciles next, so put it back before unwinding.
            self.queue.add(key)
            raise
        except TerminalError as error:
            result_label = "error"
            self._metrics.reconcile_errors.labels(controller=self.name).inc()
            self._metrics.terminal_errors.labels(controller=self.name).inc()
            self.queue.forget(key)
            logger.warning("reconcile %s failed permanently: %s", key, error, extra={"reconcileID": reconcile_id})
        except Exception as error:
            result_label = "error"
            self._metrics.reconcile_errors.labels(controller=self.name).inc()
            self.queue.add_rate_limited(key)
            if is_outage(error):
                self._outage.failed(error, detail=str(key))
                self._outage_keys.add(key)
            else:
                logger.warning(
                    "reconcile %s failed (retry %d): %s",
                    key,
                    self.queue.num_requeues(key),
                    error,
                    exc_info=not _expected(error),
                    extra={"reconcileID": reconcile_id},
                )
        else:
            self._outage_keys.discard(key)
            if self._outage.succeeded():
                self.server_answers()
            self.queue.forget(key)
            if result.requeue_after is not None and result.requeue_after > 0:
                result_label = "requeue_after"
                self.queue.add_after(key, result.requeue_after)
        finally:
            active.dec()
            elapsed = time.monotonic() - started
            self._metrics.reconcile_time.labels(controller=self.name).observe(elapsed)
        self._metrics.reconcile_total.labels(controller=self.name, result=result_label).inc()


def _expected(error: Exception) -> bool:
    """Errors that are part of normal operation and need no traceback in the log."""
    return isinstance(error, ApiError | ReconcileError)


class ReconcileError(Exception):
    """A retryable failure the reconcile already reported (status, events); logged without traceback.
    `outage`: every failure in it was the API server being unavailable (runtime/outage.py)."""

    def __init__(self, message: str, *, outage: bool = False) -> None:
        super().__init__(message)
        self.outage = outage
