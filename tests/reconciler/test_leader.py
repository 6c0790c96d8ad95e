"""Leader election on a coordination.k8s.io/v1 Lease: one writer, fast hand-off, leader-only tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.runtime.kinds import DEPLOYMENT, LEASE
from reconciler.runtime.leader import LeaseTimings
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually, quiet

Start = Callable[..., Awaitable[RunningReconciler]]


def lease(cluster: Cluster) -> dict[str, Any]:
    return cluster.get(LEASE, "modelbooster-reconciler", "default") or {}


def holder(cluster: Cluster) -> str | None:
    return (lease(cluster).get("spec") or {}).get("holderIdentity")


def _deployment(name: str) -> dict[str, Any]:
    pod = {"metadata": {"labels": {"app": "r"}}, "spec": {"containers": [{"name": "r", "image": "r"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "r"}}, "template": pod},
    }


def lease_creates(reconciler: RunningReconciler) -> list[Any]:
    return [e for e in reconciler.writes() if e.resource == "leases" and e.verb == "create"]


def non_lease_writes(reconciler: RunningReconciler) -> list[Any]:
    return [e for e in reconciler.writes() if e.resource != "leases"]


async def test_only_the_lease_holder_writes(cluster: Cluster, start_reconciler: Start) -> None:
    first = await start_reconciler("first", leader_elect=True)
    await eventually(lambda: holder(cluster) == "first", message="first leads")
    second = await start_reconciler("second", leader_elect=True)
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await quiet(0.5)

    assert non_lease_writes(first)
    assert non_lease_writes(second) == []
    assert second.manager.caches_synced()  # the standby keeps its caches warm...
    assert second.process.registered_by(MODELBOOSTER).reconciler.boosters.get("ns", "m") is not None
    assert first.metric("leader_election_master_status", name="modelbooster-reconciler") == 1
    assert second.metric("leader_election_master_status", name="modelbooster-reconciler") == 0
    spec = lease(cluster)["spec"]
    assert spec["leaseDurationSeconds"] == 2  # 1.5 s, rounded up to whole seconds
    assert spec["leaseTransitions"] == 0


async def test_a_graceful_leader_releases_the_lease_and_the_standby_takes_over(
    cluster: Cluster, start_reconciler: Start
) -> None:
    # A long lease: a takeover within seconds can only come from the release.
    slow_expiry = LeaseTimings(lease_duration=30.0, renew_deadline=5.0, retry_period=0.2)
    first = await start_reconciler("first", leader_elect=True, lease=slow_expiry)
    await eventually(lambda: holder(cluster) == "first")
    second = await start_reconciler("second", leader_elect=True, lease=slow_expiry)
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")

    await first.stop()
    assert not holder(cluster)  # released, not left to expire
    await eventually(lambda: holder(cluster) == "second", within=5.0, message="second leads")
    await cluster.delete(MODEL_SERVING, "m-a")
    await eventually(lambda: cluster.get(MODEL_SERVING, "m-a") is not None, message="the new leader repairs")
    assert [e.resource for e in non_lease_writes(second)].count("modelservings") == 1
    assert lease(cluster)["spec"]["leaseTransitions"] == 1


async def test_a_crashed_leader_is_replaced_after_the_lease_expires(cluster: Cluster, start_reconciler: Start) -> None:
    first = await start_reconciler("first", leader_elect=True)
    await eventually(lambda: holder(cluster) == "first")
    second = await start_reconciler("second", leader_elect=True)
    await first.kill()
    assert holder(cluster) == "first"  # nobody released it
    await eventually(lambda: holder(cluster) == "second", within=4.0, message="takeover after expiry")
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    assert non_lease_writes(second)


async def test_a_leader_that_cannot_renew_stops_writing(
    cluster: Cluster, fake: FakeApiServer, start_reconciler: Start
) -> None:
    first = await start_reconciler("first", leader_elect=True)
    await eventually(lambda: first.manager.is_leader)
    outage = fake.faults.fail_next(None, status=503, resource="leases")
    await eventually(lambda: not first.manager.is_leader, within=3.0, message="steps down after the renew deadline")
    assert first.metric("leader_election_master_status", name="modelbooster-reconciler") == 0
    cluster.create_booster(booster("m", backend("a")))
    await quiet(0.5)
    assert non_lease_writes(first) == []
    fake.faults.remove(outage)
    await eventually(lambda: cluster.condition("m", "Initialized") == "True", within=5.0, message="leads again")


async def test_leader_tasks_run_only_while_leading(cluster: Cluster, fake: FakeApiServer) -> None:

    from tests.reconciler.harness import FAST, overridden

    runs: dict[str, int] = {"first": 0, "second": 0}
    reconcilers = []
    for name in ("first", "second"):
        running = RunningReconciler(fake, overridden(FAST, leader_elect=True), name)

        async def duty(name: str = name) -> None:
            runs[name] += 1
            await asyncio.Event().wait()  # runs until leadership ends

        running.manager.add_leader_task("duty", duty)
        reconcilers.append(running)
    try:
        await reconcilers[0].start()
        await eventually(lambda: runs["first"] == 1)
        await reconcilers[1].start()
        await quiet(0.5)
        assert runs == {"first": 1, "second": 0}
        await reconcilers[0].stop()
        await eventually(lambda: runs["second"] == 1, within=2.0)
    finally:
        for running in reconcilers:
            await running.stop()


async def test_a_crashing_leader_task_is_restarted(cluster: Cluster, fake: FakeApiServer) -> None:

    from tests.reconciler.harness import FAST, overridden

    attempts = 0
    running = RunningReconciler(fake, overridden(FAST, leader_elect=True), "solo")
    running.manager.options.leader_task_backoff = 0.05

    async def flaky() -> None:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise RuntimeError("boom")
        await asyncio.Event().wait()

    running.manager.add_leader_task("flaky", flaky)
    try:
        await running.start()
        await eventually(lambda: attempts == 3)
        assert running.manager.is_leader  # a crashing duty does not cost leadership
    finally:
        await running.stop()


async def test_a_released_lease_is_taken_at_once_not_at_the_next_retry(
    cluster: Cluster, start_reconciler: Start
) -> None:
    # Retries 5 s apart: a takeover within a second can only come from the watch on the Lease.
    slow_retry = LeaseTimings(lease_duration=30.0, renew_deadline=10.0, retry_period=5.0)
    first = await start_reconciler("first", leader_elect=True, lease=slow_retry)
    await eventually(lambda: holder(cluster) == "first")
    await start_reconciler("second", leader_elect=True, lease=slow_retry)
    await asyncio.sleep(0.3)  # the standby's first try has failed; its next one is 5 s away
    await first.stop()
    await eventually(lambda: holder(cluster) == "second", within=1.5, message="second leads within the second")


async def test_a_stopping_leader_keeps_leading_for_the_shutdown_delay(
    cluster: Cluster, start_reconciler: Start
) -> None:
    first = await start_reconciler("first", leader_elect=True, shutdown_delay=1.5)
    await eventually(lambda: holder(cluster) == "first")
    first._stop.set()  # SIGTERM
    await asyncio.sleep(0.2)
    cluster.create_booster(booster("late", backend("a")))
    # Reconciled by the stopping leader: a one-replica Deployment's replacement is still starting.
    await eventually(lambda: cluster.condition("late", "Initialized") == "True", within=1.0)
    assert holder(cluster) == "first"
    await first.stop()
    assert not holder(cluster)  # released once the delay is over


async def test_the_lease_is_owned_by_the_deployment_and_goes_with_it(
    cluster: Cluster, fake: FakeApiServer, start_reconciler: Start
) -> None:
    deployment = await cluster.client.create(DEPLOYMENT, _deployment("mb-reconciler"))
    first = await start_reconciler("first", leader_elect=True, lease_owner_deployment="mb-reconciler")
    await eventually(lambda: holder(cluster) == "first")
    owners = lease(cluster)["metadata"]["ownerReferences"]
    assert owners == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "mb-reconciler", "uid": deployment["metadata"]["uid"]}
    ]
    await first.kill()  # as after `helm uninstall`: nobody releases the Lease
    await cluster.client.delete(DEPLOYMENT, "default", "mb-reconciler")
    await eventually(lambda: not lease(cluster), message="the garbage collector deletes the Lease")


async def test_a_leader_of_an_uninstalled_release_does_not_write_back_its_lease(
    cluster: Cluster, start_reconciler: Start
) -> None:
    # `helm uninstall` then at once `helm install`: the old leader is still in its shutdown delay when the garbage
    # collector deletes its Lease with its Deployment, and the reinstalled Deployment has the same name.
    await cluster.client.create(DEPLOYMENT, _deployment("mb-reconciler"))
    first = await start_reconciler("first", leader_elect=True, lease_owner_deployment="mb-reconciler", shutdown_delay=5)
    await eventually(lambda: holder(cluster) == "first")
    first._stop.set()  # SIGTERM: keeps leading for its shutdown delay
    await cluster.client.delete(DEPLOYMENT, "default", "mb-reconciler")
    await eventually(lambda: not lease(cluster), message="the garbage collector deletes the Lease")
    creates_before = len(lease_creates(first))
    await quiet(0.6)  # three of the old leader's renewals
    assert len(lease_creates(first)) == creates_before, "the old leader wrote its Lease back"
    assert not lease(cluster)
    reinstalled = await cluster.client.create(DEPLOYMENT, _deployment("mb-reconciler"))
    await start_reconciler("second", leader_elect=True, lease_owner_deployment="mb-reconciler")
    await eventually(lambda: holder(cluster) == "second", within=1.0, message="the reinstalled candidate leads")
    assert [ref["uid"] for ref in lease(cluster)["metadata"]["ownerReferences"]] == [reinstalled["metadata"]["uid"]]
    await first.stop()
    assert holder(cluster) == "second"


async def test_a_lease_written_before_gets_the_owner_when_taken(cluster: Cluster, start_reconciler: Start) -> None:
    await cluster.client.create(
        LEASE,
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": "modelbooster-reconciler", "namespace": "default"}, "spec": {}},
    )  # fmt: skip
    deployment = await cluster.client.create(DEPLOYMENT, _deployment("mb-reconciler"))
    await start_reconciler("first", leader_elect=True, lease_owner_deployment="mb-reconciler")
    await eventually(lambda: holder(cluster) == "first")
    assert [ref["uid"] for ref in lease(cluster)["metadata"]["ownerReferences"]] == [deployment["metadata"]["uid"]]


async def test_without_its_deployment_the_leader_still_leads(cluster: Cluster, start_reconciler: Start) -> None:
    await start_reconciler("first", leader_elect=True, lease_owner_deployment="missing")
    await eventually(lambda: holder(cluster) == "first")
    assert "ownerReferences" not in lease(cluster)["metadata"]
