"""The Inferno controller's reconcile: one run of the optimiser for an Optimizer's namespace, on demand
(`spec.optimize`) or every `spec.interval`, with the closed loop around it (reconciler.inferno.loop). The
order of the writes makes a crash converge, and failures say whether retrying can help (docs/design/inferno.md
§8). What it keeps per Optimizer it drops when a run finds the Optimizer gone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from optimizer.system import Allocation, allocation_to_resource
from reconciler.inferno.inputs import Inputs, gather
from reconciler.inferno.kinds import OPTIMIZER, SERVER
from reconciler.inferno.loop import ClosedLoop
from reconciler.inferno.mapping import generation, optimize_requested, optimizer_interval
from reconciler.inferno.metrics import InfernoMetrics
from reconciler.inferno.solvers import REASON_INVALID, Answer, RunFailure, Solver
from reconciler.runtime.client import JSON_PATCH, ApiError, KubeClient
from reconciler.runtime.conditions import (
    ConditionStatus,
    WantedCondition,
    merge_conditions,
    rfc3339_now,
    status_differs,
)
from reconciler.runtime.controller import ReconcileError, Result, TerminalError
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text, metadata
from reconciler.runtime.source import ObjectKey
from shared.api import inferno as api

logger = logging.getLogger(__name__)

CONDITION_OPTIMIZED: Final = "Optimized"
REASON_SUCCEEDED: Final = "OptimizationSucceeded"
REASON_WRITE_FAILED: Final = "WriteFailed"
EVENT_OPTIMIZED: Final = "Optimized"
EVENT_MIRROR_FAILED: Final = "MirrorFailed"

_T = TypeVar("_T")


class OptimizerReconciler:
    def __init__(
        self,
        *,
        client: KubeClient,
        informers: Mapping[Kind, Informer],
        recorder: EventRecorder,
        solver: Solver,
        metrics: InfernoMetrics,
        loop: ClosedLoop,
        field_manager: str,
        write_concurrency: int = 16,
        now: Callable[[], str] = rfc3339_now,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.informers = informers
        self.recorder = recorder
        self.solver = solver
        self.metrics = metrics
        self.field_manager = field_manager
        self._write_concurrency = write_concurrency
        self._now = now
        self._clock = clock
        self.loop = loop
        # Runs of one namespace never overlap (two Optimizers there would measure and scale the same Servers).
        self._namespace_locks: dict[str, asyncio.Lock] = {}
        self._last_run: dict[ObjectKey, float] = {}  # this leader's clock; a new leader runs at once

    async def reconcile(self, key: ObjectKey) -> Result:
        optimizer = self.informers[OPTIMIZER].get(key.namespace, key.name)
        if optimizer is None:
            await self._forget(key)
            return Result()
        if metadata(optimizer).get("deletionTimestamp"):
            return Result()
        interval = optimizer_interval(optimizer)
        if optimize_requested(optimizer):
            await self._run(key, optimizer, scheduled=False)
            return Result() if interval is None else Result(requeue_after=self._until_next(key, interval))
        if interval is None:
            if self.solver.mirrors:
                await self._mirror(key, optimizer)
            return Result()
        last = self._last_run.get(key)
        if last is not None and self._clock() - last < interval:
            return Result(requeue_after=interval - (self._clock() - last))
        try:
            await self._run(key, optimizer, scheduled=True)
        except (ReconcileError, TerminalError) as error:
            # Reported by the run (status, event, metric); the schedule goes on either way.
            logger.info("inferno %s: scheduled run failed: %s", key, error)
        return Result(requeue_after=self._until_next(key, interval))

    async def _forget(self, key: ObjectKey) -> None:
        """The Optimizer is gone: its schedule and cost series go; with the namespace's last Optimizer, what the
        loop kept and published for the namespace's Servers (no run will come back for them). Under the
        namespace's lock, so that a run still in flight does not fill again what was just dropped. (The lock
        itself stays: one per namespace that ever ran, as a waiter may hold it.)"""
        self._last_run.pop(key, None)
        self.metrics.forget_optimizer(key.namespace, key.name)
        async with self._namespace_locks.setdefault(key.namespace, asyncio.Lock()):
            if self.informers[OPTIMIZER].objects(key.namespace):
                return
            self.metrics.publish_servers(key.namespace, set())
            self.loop.forget_namespace(key.namespace)

    def _until_next(self, key: ObjectKey, interval: float) -> float:
        """Runs start every `interval` (counted from the last start, so a run's own time does not stretch the
        period); a run longer than the interval is followed at once by the next, never overlapping it."""
        last = self._last_run.get(key)
        elapsed = 0.0 if last is None else self._clock() - last
        return max(interval - elapsed, 0.001)

    # ------------------------------------------------------------------ one run
    async def _run(self, key: ObjectKey, optimizer: dict[str, Any], *, scheduled: bool) -> None:
        lock = self._namespace_locks.setdefault(key.namespace, asyncio.Lock())
        async with lock:
            self._last_run[key] = self._clock()
            await self._run_locked(key, optimizer, scheduled=scheduled)

    async def _run_locked(self, key: ObjectKey, optimizer: dict[str, Any], *, scheduled: bool) -> None:
        started_at = self._now()
        started = self._clock()
        try:
            measurements = await self.loop.measure(key.namespace)
            inputs = gather(self.informers, key.namespace, optimizer)
            adjusted = self.loop.adjust(
                key.namespace, inputs.system, servers=inputs.servers, measurements=measurements,
                corrections=inputs.corrections, saturation=inputs.saturation,
            )  # fmt: skip
            answer = await self.solver.run(inputs.system)
            if self.solver.mirrors:
                await self._mark_active(inputs.objects)
            written = await self._write_desired(inputs, answer)
            stale = await self.loop.actuate(
                key.namespace, servers=inputs.servers, allocations=answer.allocations, measurements=measurements,
                adjusted=adjusted,
            )  # fmt: skip
        except RunFailure as failure:
            await self._report_failure(optimizer, failure)
            self.metrics.optimizations.labels("invalid" if failure.reason == REASON_INVALID else "error").inc()
            if failure.retryable:
                raise ReconcileError(f"{key}: {failure.message}") from None
            raise TerminalError(f"{key}: {failure.message}") from None
        duration = self._clock() - started
        unallocated, total_cost, message = _outcome(inputs.servers, answer, stale=stale)
        status = {
            "done": True,
            "conditions": self._conditions(optimizer, "True", REASON_SUCCEEDED, message),
            "lastRunTime": started_at,
            "lastRunDurationSeconds": round(duration, 6),
            "totalCost": total_cost,
            "unallocatedServers": unallocated,
        }
        stored = await self._write_status(optimizer, status, precondition=True)
        if not scheduled or written:  # a period that changed no decision posts no event
            await self.recorder.emit(optimizer, type="Normal", reason=EVENT_OPTIMIZED, message=message)
        self.metrics.optimizations.labels("success").inc()
        self.metrics.duration.observe(duration)
        self.metrics.allocation_cost.labels(key.namespace, key.name).set(total_cost)
        if not scheduled:
            # Last: once optimize is false nothing re-runs, so everything above (the metrics too: whoever sees the
            # flag reset and scrapes sees this run's cost) must already be in place.
            stored = await self.client.patch(
                OPTIMIZER,
                key.namespace,
                key.name,
                {"metadata": {"resourceVersion": meta_text(stored, "resourceVersion")}, "spec": {"optimize": False}},
                field_manager=self.field_manager,
            )
            self.informers[OPTIMIZER].write_through(stored)
        logger.info("inferno %s: %s in %.3fs", key, message, duration)

    async def _mirror(self, key: ObjectKey, optimizer: dict[str, Any]) -> None:
        """Stateful mode with no run pending: keep the optimizer's system equal to the namespace's."""
        try:
            inputs = gather(self.informers, key.namespace, optimizer)
        except RunFailure as failure:
            # An invalid system is not pushed; the run that asks for it reports why.
            logger.info("inferno %s: not mirroring: %s", key, failure.message)
            return
        try:
            await self.solver.mirror(inputs.system)
        except RunFailure as failure:
            await self.recorder.emit(optimizer, type="Warning", reason=EVENT_MIRROR_FAILED, message=failure.message)
            if failure.retryable:
                raise ReconcileError(f"{key}: mirroring failed: {failure.message}") from None
            raise TerminalError(f"{key}: mirroring failed: {failure.message}") from None
        await self._mark_active(inputs.objects)

    # ------------------------------------------------------------------ writes
    async def _write_desired(self, inputs: Inputs, answer: Answer) -> int:
        """desiredAlloc on every Server whose answer differs from what it holds; nothing else. Returns how many
        were written."""
        pending: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        for name, server in inputs.servers.items():
            allocation = answer.allocations.get(name)
            if allocation is None:  # unplaced: say so explicitly rather than leave an earlier run's answer
                allocation = Allocation(load=inputs.system.servers[name].load)
            wanted = api.dump_wire(allocation_to_resource(allocation))
            if (server.get("spec") or {}).get("desiredAlloc") != wanted:
                pending.append((name, server, wanted))
        results = await _bounded(
            [self._write_one_desired(server, wanted) for _, server, wanted in pending], limit=self._write_concurrency
        )
        failures = []
        for (name, _, _), result in zip(pending, results, strict=True):
            if isinstance(result, ApiError):
                failures.append(f"writing desiredAlloc of Server {name} failed: {result}")
            elif isinstance(result, BaseException):
                raise result
        if failures:
            raise RunFailure(REASON_WRITE_FAILED, "; ".join(failures), retryable=True)
        return len(pending)

    async def _write_one_desired(self, server: dict[str, Any], wanted: dict[str, Any]) -> None:
        stored = await self.client.patch(
            SERVER,
            meta_text(server, "namespace"),
            meta_text(server, "name"),
            [{"op": "add", "path": "/spec/desiredAlloc", "value": wanted}],
            patch_type=JSON_PATCH,
            field_manager=self.field_manager,
        )
        self.informers[SERVER].write_through(stored)
        self.metrics.desired_writes.inc()

    async def _mark_active(self, objects: Sequence[tuple[Kind, dict[str, Any]]]) -> None:
        """Stateful mode: `status.active: true` on each object the optimizer now holds, as the reference."""
        pending = [(kind, obj) for kind, obj in objects if (obj.get("status") or {}).get("active") is not True]

        async def mark(kind: Kind, obj: dict[str, Any]) -> None:
            stored = await self.client.patch(
                kind,
                meta_text(obj, "namespace"),
                meta_text(obj, "name"),
                {"status": {"active": True}},
                subresource="status",
                field_manager=self.field_manager,
            )
            self.informers[kind].write_through(stored)

        results = await _bounded([mark(kind, obj) for kind, obj in pending], limit=self._write_concurrency)
        failures = [
            f"{kind.kind} {meta_text(obj, 'name')}: {result}"
            for (kind, obj), result in zip(pending, results, strict=True)
            if isinstance(result, ApiError)
        ]
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, ApiError):
                raise result
        if failures:
            raise RunFailure(
                REASON_WRITE_FAILED, f"setting status.active failed: {'; '.join(failures)}", retryable=True
            )

    def _conditions(
        self, optimizer: dict[str, Any], status: ConditionStatus, reason: str, message: str
    ) -> list[dict[str, Any]]:
        observed = generation(optimizer)
        return merge_conditions(
            (optimizer.get("status") or {}).get("conditions"),
            [WantedCondition(CONDITION_OPTIMIZED, status, reason, message)],
            generation=observed if isinstance(observed, int) else None,
            now=self._now(),
        )

    async def _report_failure(self, optimizer: dict[str, Any], failure: RunFailure) -> None:
        message = failure.message + (" (retrying)" if failure.retryable else "")
        status = {"done": False, "conditions": self._conditions(optimizer, "False", failure.reason, message)}
        await self._write_status(optimizer, status, precondition=False)
        await self.recorder.emit(optimizer, type="Warning", reason=failure.reason, message=failure.message)

    async def _write_status(
        self, optimizer: dict[str, Any], status: dict[str, Any], *, precondition: bool
    ) -> dict[str, Any]:
        """Patch the status if it differs; with `precondition`, only if the Optimizer is unchanged since it
        was read (409 Conflict otherwise, and the run is retried with what changed)."""
        if not status_differs(optimizer.get("status"), status):
            return optimizer
        patch: dict[str, Any] = {"status": status}
        if precondition:
            patch["metadata"] = {"resourceVersion": meta_text(optimizer, "resourceVersion")}
        stored = await self.client.patch(
            OPTIMIZER,
            meta_text(optimizer, "namespace"),
            meta_text(optimizer, "name"),
            patch,
            subresource="status",
            field_manager=self.field_manager,
        )
        self.informers[OPTIMIZER].write_through(stored)
        return stored


def _outcome(servers: Mapping[str, Any], answer: Answer, *, stale: Sequence[str]) -> tuple[list[str], float, str]:
    """A successful run's unallocated Servers, total cost, and the message that says it."""
    allocated = {name: answer.allocations[name] for name in servers if name in answer.allocations}
    unallocated = sorted(name for name in servers if name not in allocated)
    total_cost = sum(allocation.cost for allocation in allocated.values())
    message = (
        f"{len(allocated)} servers allocated, {len(unallocated)} unallocated, "
        f"total cost {total_cost:g} cents/h ({answer.how})"
    )
    if unallocated:
        message += f"; unallocated: {', '.join(unallocated)}"
    if stale:
        message += f"; load not measured (last load kept): {', '.join(stale)}"
    return unallocated, total_cost, message


async def _bounded(calls: Sequence[Awaitable[_T]], *, limit: int) -> list[_T | BaseException]:
    """Run `calls` with at most `limit` at a time; results (or exceptions) in order."""
    semaphore = asyncio.Semaphore(limit)

    async def one(call: Awaitable[_T]) -> _T:
        async with semaphore:
            return await call

    return list(await asyncio.gather(*(one(call) for call in calls), return_exceptions=True))


