"""/healthz, /readyz and /metrics of the reconciler process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp.test_utils import TestClient, TestServer

from reconciler.modelbooster.kinds import MODEL_ROUTE
from reconciler.runtime.health import make_app
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import FAST, Cluster, RunningReconciler, backend, booster, eventually


async def test_probes_and_metrics(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    async with TestClient(TestServer(make_app(reconciler.manager))) as http:
        assert (await http.get("/healthz")).status == 200
        assert (await http.get("/readyz")).status == 200
        response = await http.get("/metrics")
        assert response.status == 200
        text = await response.text()
    for line in (
        'controller_runtime_reconcile_total{controller="modelbooster",result="success"}',
        'controller_runtime_reconcile_errors_total{controller="modelbooster"} 0.0',
        'controller_runtime_reconcile_time_seconds_bucket{controller="modelbooster",le="0.005"}',
        'workqueue_depth{controller="modelbooster",name="modelbooster"}',
        'workqueue_adds_total{controller="modelbooster",name="modelbooster"}',
        'workqueue_queue_duration_seconds_bucket{controller="modelbooster",le="1e-08",name="modelbooster"}',
        'workqueue_retries_total{controller="modelbooster",name="modelbooster"}',
        'leader_election_master_status{name="modelbooster-reconciler"} 1.0',
        'modelbooster_children_applied_total{action="created",kind="ModelServing"} 1.0',
        'modelbooster_boosters{condition="Initialized"} 1.0',
        'modelbooster_boosters{condition="Active"} 0.0',
        'rest_client_requests_total{code="201",host=',
    ):
        assert line in text, line


async def test_not_ready_until_caches_sync(fake: FakeApiServer) -> None:
    # The API server refuses every list at first: the reconciler is alive but not ready.
    rule = fake.faults.fail_next(None, status=503, verb="list")
    running = RunningReconciler(fake, FAST, "r1")
    task = asyncio.create_task(running.process.manager.run(running._stop))
    try:
        async with TestClient(TestServer(make_app(running.manager))) as http:
            await asyncio.sleep(0.2)
            response = await http.get("/readyz")
            assert response.status == 503
            assert "caches not synced" in await response.text()
            assert (await http.get("/healthz")).status == 200
            fake.faults.remove(rule)
            await eventually(running.manager.ready, within=5.0)
            assert (await http.get("/readyz")).status == 200
    finally:
        running._stop.set()
        await task
        await running.client.close()


async def test_shutdown_finishes_in_flight_work_and_stops_cleanly(
    cluster: Cluster, fake: FakeApiServer, start_reconciler: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    reconciler = await start_reconciler()
    slow = fake.faults.delay(0.3, verb="create", resource="modelroutes")
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: bool(reconciler.manager.controllers[0].queue.processing()))
    await reconciler.stop()  # waits for the reconcile in hand
    fake.faults.remove(slow)
    # The reconcile that was in flight when the stop came was allowed to finish its writes.
    assert cluster.get(MODEL_ROUTE, "m") is not None
    assert any(e.resource == "modelroutes" and e.status == 201 for e in reconciler.writes())
