"""Controller bookkeeping (controller-runtime's reconcileHandler) with a scripted reconcile function."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reconciler.modelbooster.kinds import MODEL_BOOSTER
from reconciler.runtime.controller import Controller, Result, TerminalError, map_to_controller_owner
from reconciler.runtime.metrics import Metrics
from reconciler.runtime.ratelimit import ItemExponentialBackoff
from reconciler.runtime.source import ObjectKey, map_to_self

KEY = ObjectKey("ns", "m")


def value(metrics: Metrics, metric: str, **labels: str) -> float:
    result = metrics.registry.get_sample_value(metric, labels)
    return 0.0 if result is None else result


def make(reconcile: Any, metrics: Metrics) -> Controller:
    return Controller(
        name="test",
        reconcile=reconcile,
        workers=2,
        rate_limiter=ItemExponentialBackoff(base_delay=0.01, max_delay=0.05),
        metrics=metrics,
    )


async def test_success_counts_and_forgets() -> None:
    metrics = Metrics()

    async def ok(key: ObjectKey) -> Result:
        return Result()

    controller = make(ok, metrics)
    controller.queue.add_rate_limited(KEY)  # pretend an earlier failure
    await controller.process(KEY)
    assert controller.queue.num_requeues(KEY) == 0
    assert value(metrics, "controller_runtime_reconcile_total", controller="test", result="success") == 1
    assert value(metrics, "controller_runtime_reconcile_total", controller="test", result="error") == 0
    assert value(metrics, "controller_runtime_reconcile_time_seconds_count", controller="test") == 1


async def test_errors_are_retried_with_backoff() -> None:
    metrics = Metrics()

    async def boom(key: ObjectKey) -> Result:
        raise RuntimeError("nope")

    controller = make(boom, metrics)
    await controller.process(KEY)
    await controller.process(KEY)
    assert controller.queue.num_requeues(KEY) == 2
    assert value(metrics, "controller_runtime_reconcile_errors_total", controller="test") == 2
    assert value(metrics, "workqueue_retries_total", name="test", controller="test") == 2
    assert await asyncio.wait_for(controller.queue.get(), 1) == KEY


async def test_terminal_errors_are_counted_not_retried() -> None:
    metrics = Metrics()

    async def invalid(key: ObjectKey) -> Result:
        raise TerminalError("bad spec")

    controller = make(invalid, metrics)
    await controller.process(KEY)
    await asyncio.sleep(0.05)
    assert len(controller.queue) == 0
    assert value(metrics, "controller_runtime_terminal_reconcile_errors_total", controller="test") == 1


async def test_requeue_after_schedules_the_key() -> None:
    metrics = Metrics()

    async def later(key: ObjectKey) -> Result:
        return Result(requeue_after=0.02)

    controller = make(later, metrics)
    await controller.process(KEY)
    assert value(metrics, "controller_runtime_reconcile_total", controller="test", result="requeue_after") == 1
    assert await asyncio.wait_for(controller.queue.get(), 1) == KEY


async def test_workers_never_run_one_key_twice_at_once() -> None:
    metrics = Metrics()
    running: set[ObjectKey] = set()
    overlaps = 0
    calls = 0

    async def slow(key: ObjectKey) -> Result:
        nonlocal overlaps, calls
        calls += 1
        if key in running:
            overlaps += 1
        running.add(key)
        await asyncio.sleep(0.02)
        running.discard(key)
        return Result()

    controller = make(slow, metrics)
    workers = asyncio.create_task(controller.run_workers())
    for _ in range(10):
        controller.enqueue(KEY)
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.1)
    workers.cancel()
    await asyncio.gather(workers, return_exceptions=True)
    assert overlaps == 0
    assert 2 <= calls < 10  # adds during a run collapse into one more run


async def test_a_cancelled_reconcile_puts_its_key_back() -> None:
    metrics = Metrics()
    started = asyncio.Event()

    async def hang(key: ObjectKey) -> Result:
        started.set()
        await asyncio.sleep(10)
        return Result()

    controller = make(hang, metrics)
    workers = asyncio.create_task(controller.run_workers())
    controller.enqueue(KEY)
    await asyncio.wait_for(started.wait(), 1)
    workers.cancel()
    await asyncio.gather(workers, return_exceptions=True)
    assert len(controller.queue) == 1  # the next leader's workers pick it up


def test_controller_needs_a_worker() -> None:
    async def ok(key: ObjectKey) -> Result:
        return Result()

    with pytest.raises(ValueError, match="workers must be >= 1"):
        Controller(name="x", reconcile=ok, workers=0, rate_limiter=ItemExponentialBackoff(), metrics=Metrics())


def test_owner_mapper_follows_the_controller_reference_of_the_right_kind() -> None:
    mapper = map_to_controller_owner(MODEL_BOOSTER)
    child = {
        "metadata": {
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "controller": False},
                {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "name": "m",
                 "controller": True},
            ],
        }
    }  # fmt: skip
    assert set(mapper("ADDED", None, child)) == {KEY}
    not_controller = {"metadata": {"namespace": "ns", "ownerReferences": [
        {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "name": "m"}]}}  # fmt: skip
    assert set(mapper("ADDED", None, not_controller)) == set()
    assert list(map_to_self("DELETED", {"metadata": {"namespace": "ns", "name": "m"}}, None)) == [KEY]
