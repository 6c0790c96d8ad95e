"""WorkQueue: de-duplication, per-key exclusivity, delayed and rate-limited adds (client-go semantics)."""

from __future__ import annotations

import asyncio

import pytest

from reconciler.runtime.queue import QueueObserver, QueueShutDown, WorkQueue
from reconciler.runtime.ratelimit import ItemExponentialBackoff


async def test_adds_of_a_queued_key_collapse_into_one() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for _ in range(5):
        queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    assert len(queue) == 0


async def test_a_key_being_processed_is_not_handed_out_again_until_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = await queue.get()
    queue.add("a")  # changed while a worker holds it
    queue.add("a")
    assert len(queue) == 0  # not available to a second worker
    queue.done(key)
    assert len(queue) == 1  # re-queued exactly once
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_done_without_new_adds_does_not_requeue() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.done(await queue.get())
    assert len(queue) == 0


async def test_get_waits_for_an_add() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("a")
    assert await asyncio.wait_for(getter, 1) == "a"


async def test_add_after_keeps_the_earliest_deadline() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 5.0)
    queue.add_after("a", 0.01)
    queue.add_after("a", 3.0)  # later than the pending one: ignored
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == "a"


async def test_an_immediate_add_supersedes_a_pending_delayed_one() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.05)
    queue.add("a")
    queue.done(await queue.get())
    await asyncio.sleep(0.1)
    assert len(queue) == 0  # the delayed add was cancelled, not delivered a second time


async def test_rate_limited_adds_back_off_and_forget_resets() -> None:
    delays: list[float] = []
    retries: list[int] = []
    limiter = ItemExponentialBackoff(base_delay=0.01, max_delay=1.0)
    queue: WorkQueue[str] = WorkQueue(rate_limiter=limiter, observer=QueueObserver(on_retry=lambda: retries.append(1)))
    loop = asyncio.get_running_loop()
    for _ in range(3):
        start = loop.time()
        queue.add_rate_limited("a")
        key = await asyncio.wait_for(queue.get(), 1)
        delays.append(loop.time() - start)
        queue.done(key)
    assert queue.num_requeues("a") == 3
    assert delays[0] >= 0.009
    assert delays[1] >= 0.019
    assert delays[2] >= 0.039
    assert len(retries) == 3
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_shutdown_wakes_waiting_workers_and_drops_pending_timers() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add_after("late", 0.01)
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(getter, 1)
    await asyncio.sleep(0.02)
    queue.add("x")
    assert len(queue) == 0


async def test_shutdown_stops_handing_out_queued_keys() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_observer_sees_depth_adds_and_latency() -> None:
    depths: list[int] = []
    adds: list[int] = []
    latencies: list[float] = []
    works: list[float] = []
    queue: WorkQueue[str] = WorkQueue(
        observer=QueueObserver(
            on_depth=depths.append,
            on_add=lambda: adds.append(1),
            on_queue_latency=latencies.append,
            on_work_duration=works.append,
        )
    )
    queue.add("a")
    queue.add("a")
    queue.add("b")
    queue.done(await queue.get())
    assert depths == [1, 2, 1]
    assert len(adds) == 2
    assert len(latencies) == 1
    assert latencies[0] >= 0
    assert len(works) == 1
