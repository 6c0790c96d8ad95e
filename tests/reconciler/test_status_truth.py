"""Status tells the truth about children (docs/design/reconciler.md §8): an invalid `status.replicas` of a
ModelServing is not copied, and a child stuck terminating is shown, then recreated once it is gone."""

from __future__ import annotations

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually, quiet


def backend_statuses(cluster: Cluster, name: str = "m") -> list[dict[str, object]]:
    return list(((cluster.get(MODEL_BOOSTER, name) or {}).get("status") or {}).get("backendStatuses") or [])


async def test_a_negative_replica_count_is_not_copied(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await cluster.set_available("m-a", replicas=2)
    await eventually(lambda: backend_statuses(cluster) == [{"name": "a", "replicas": 2}])
    await cluster.set_available("m-a", replicas=-3)
    await eventually(lambda: backend_statuses(cluster) == [{"name": "a", "replicas": 0}], message="not copied")
    await cluster.set_available("m-a", replicas=2**40)
    await quiet(0.3)
    assert backend_statuses(cluster) == [{"name": "a", "replicas": 0}]
    assert cluster.condition("m", "Failed") == "False"  # the status writes went through


async def test_a_child_stuck_terminating_is_shown_and_recreated_once_gone(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await cluster.set_available("m-a")
    await eventually(lambda: cluster.condition("m", "Active") == "True")
    await cluster.patch(MODEL_SERVING, "m-a", {"metadata": {"finalizers": ["example.com/hold"]}})
    await cluster.delete(MODEL_SERVING, "m-a")

    await eventually(lambda: cluster.condition("m", "Failed") == "True", message="Failed")
    conditions = cluster.conditions()
    assert conditions["Failed"]["reason"] == "ChildTerminating"
    assert "ModelServing ns/m-a is terminating since" in conditions["Failed"]["message"]
    assert "example.com/hold" in conditions["Failed"]["message"]
    assert conditions["Active"]["status"] == "False"
    assert "ModelServing terminating: a" in conditions["Active"]["message"]
    await eventually(lambda: cluster.events("ChildTerminating"))

    old_uid = (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["uid"]
    await cluster.patch(MODEL_SERVING, "m-a", {"metadata": {"finalizers": None}})
    await eventually(lambda: (cluster.get(MODEL_SERVING, "m-a") or {}).get("metadata", {}).get("uid") not in
                     (None, old_uid), message="recreated")  # fmt: skip
    await eventually(lambda: cluster.condition("m", "Failed") == "False")
