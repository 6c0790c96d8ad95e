"""Injected API failures, cut and silent watches, 410 Gone, and a crash mid-reconcile: all converge."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVER, MODEL_SERVING
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import (
    Cluster,
    RunningReconciler,
    backend,
    booster,
    eventually,
    model_level,
    quiet,
)

EXPECTED = {
    "ModelServing": ["m-a", "m-b"],
    "ModelServer": ["m-a", "m-b"],
    "ModelRoute": ["m"],
    "AutoscalingPolicy": ["m"],
    "AutoscalingPolicyBinding": ["m"],
}


async def settled(cluster: Cluster, name: str = "m") -> None:
    await eventually(lambda: cluster.condition(name, "Initialized") == "True"
                     and cluster.condition(name, "Failed") == "False", message="converged")  # fmt: skip


def single_owner(cluster: Cluster) -> bool:
    for kind in (MODEL_SERVING, MODEL_SERVER):
        for name in cluster.names(kind):
            child = cluster.get(kind, name) or {}
            if len(child["metadata"].get("ownerReferences") or []) != 1:
                return False
    return True


async def test_conflicts_and_server_errors_are_retried_until_converged(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    fake.faults.fail_next(2, status=500, verb="create", resource="modelservings")
    fake.faults.fail_next(1, status=409, verb="create", resource="modelroutes", reason="Conflict")
    fake.faults.fail_next(2, status=409, verb="patch", resource="modelboosters/status", reason="Conflict")
    fake.faults.fail_next(1, status=503, verb="create", resource="events")
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await settled(cluster)
    assert cluster.children() == EXPECTED
    assert single_owner(cluster)
    assert reconciler.metric("controller_runtime_reconcile_errors_total", controller="modelbooster") >= 1
    assert reconciler.metric("workqueue_retries_total", name="modelbooster", controller="modelbooster") >= 1
    # The failures were reported on the way; the Event post answered 503 was counted.
    assert cluster.events("ApplyFailed")
    assert reconciler.metric("modelbooster_event_post_failures_total", reason="unavailable") == 1


async def test_failed_is_reported_while_writes_fail_and_cleared_after(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    rule = fake.faults.fail_next(None, status=500, verb="create", resource="modelservers", message="etcd is sad")
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    failed = cluster.conditions()["Failed"]
    assert failed["reason"] == "ModelAbnormal"
    assert "ModelServer ns/m-a" in failed["message"]
    assert "etcd is sad" in failed["message"]
    assert cluster.condition("m", "Initialized") == "False"
    await eventually(lambda: rule.hits >= 3, message="retried")
    fake.faults.remove(rule)
    await settled(cluster)
    assert cluster.names(MODEL_SERVER) == ["m-a"]
    # Repeated identical failures were aggregated into one event with a count.
    warnings = cluster.events("ApplyFailed")
    assert len(warnings) == 1
    assert warnings[0]["count"] >= 3


async def test_cut_watches_lose_nothing(cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler) -> None:
    for index in range(3):
        cluster.create_booster(booster(f"m{index}", backend("a")))
        fake.close_watches(abort=index % 2 == 0)
    for index in range(3):
        await settled(cluster, f"m{index}")
    fake.close_watches(abort=True)
    await cluster.delete(MODEL_SERVING, "m1-a")
    await eventually(lambda: cluster.get(MODEL_SERVING, "m1-a") is not None, message="m1-a recreated")
    assert reconciler.metric("modelbooster_watch_restarts_total", kind="ModelServing", reason="closed") + \
        reconciler.metric("modelbooster_watch_restarts_total", kind="ModelServing", reason="error") >= 1  # fmt: skip


async def test_410_gone_relists_and_sees_what_happened_meanwhile(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(booster("m", backend("a"), backend("b")))
    await settled(cluster)
    fake.stall_watches()  # the reconciler stops hearing anything...
    await cluster.delete(MODEL_SERVING, "m-b")  # ...while a child is deleted
    await cluster.delete(MODEL_SERVER, "m-a")
    fake.expire_history()  # and the history it would resume from is gone
    fake.close_watches()
    await eventually(lambda: cluster.get(MODEL_SERVING, "m-b") is not None, message="m-b recreated")
    await eventually(lambda: cluster.get(MODEL_SERVER, "m-a") is not None, message="m-a recreated")
    assert reconciler.metric("modelbooster_watch_restarts_total", kind="ModelServing", reason="gone") >= 1


async def test_a_silently_dead_watch_is_noticed_by_the_read_timeout(
    cluster: Cluster, fake: FakeApiServer, start_reconciler: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    reconciler = await start_reconciler(watch_timeout=300, watch_read_timeout=0.5)
    cluster.create_booster(booster("m", backend("a")))
    await settled(cluster)
    fake.stall_watches()  # open, but nothing arrives: a dead TCP connection looks like this
    await cluster.delete(MODEL_SERVING, "m-a")
    await eventually(lambda: cluster.get(MODEL_SERVING, "m-a") is not None, within=5, message="recreated")
    assert reconciler.metric("modelbooster_watch_restarts_total", kind="ModelServing", reason="timeout") >= 1


async def test_a_reconciler_killed_mid_reconcile_is_finished_by_its_successor_without_duplicates(
    cluster: Cluster, fake: FakeApiServer, start_reconciler: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    first = await start_reconciler("first")
    slow = fake.faults.delay(0.4, verb="create", resource="modelservers")
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await eventually(lambda: len(cluster.names(MODEL_SERVING)) == 2, message="first children written")
    await first.kill()
    await quiet(0.5)  # the delayed creates may still land after the crash
    fake.faults.remove(slow)
    assert cluster.condition("m", "Initialized") != "True"

    second = await start_reconciler("second")
    await settled(cluster)
    assert cluster.children() == EXPECTED
    assert single_owner(cluster)
    # The successor only wrote what was missing: never a second ModelServing.
    assert not [e for e in second.writes() if e.resource == "modelservings"]
    status = (cluster.get(MODEL_BOOSTER, "m") or {})["status"]
    assert status["observedGeneration"] == 1
