"""The reconciler against the fake API server: create, Active, edits, pruning, drift, invalid specs, resync.

Expected values come from docs/design/reconciler.md §2 to §8 and the naming rules of docs/design/synthesis.md §2.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from reconciler.modelbooster.controller import Known
from reconciler.modelbooster.kinds import (
    AUTOSCALING_POLICY,
    AUTOSCALING_POLICY_BINDING,
    MODEL_BOOSTER,
    MODEL_ROUTE,
    MODEL_SERVER,
    MODEL_SERVING,
)
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.runtime.source import ObjectKey
from tests.reconciler.harness import (
    NS,
    Cluster,
    RunningReconciler,
    backend,
    booster,
    child_writes,
    crd_documents,
    eventually,
    model_level,
    quiet,
)

TWO_BACKENDS = {
    "ModelServing": ["m-a", "m-b"],
    "ModelServer": ["m-a", "m-b"],
    "ModelRoute": ["m"],
    "AutoscalingPolicy": ["m"],
    "AutoscalingPolicyBinding": ["m"],
}


def backends_column(cluster: Cluster, name: str = "m") -> object:
    """What `kubectl get modelboosters` shows under `Backends`: the chart CRD's column path, resolved."""
    crd = next(doc for doc in crd_documents() if doc["spec"]["names"]["kind"] == "ModelBooster")
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    path = next(column["jsonPath"] for column in columns if column["name"] == "Backends")
    value: object = cluster.get(MODEL_BOOSTER, name)
    for step in path.lstrip(".").split("."):
        value = value.get(step) if isinstance(value, dict) else None
    return value


async def converged(cluster: Cluster, reconciler: RunningReconciler, name: str = "m") -> None:
    await eventually(lambda: cluster.condition(name, "Initialized") == "True", message="Initialized")
    await eventually(lambda: len(reconciler.manager.controllers[0].queue) == 0 and not
                     reconciler.manager.controllers[0].queue.processing())  # fmt: skip
    await quiet(0.2)


async def test_create_makes_every_child_and_reports_initialized(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    created = cluster.create_booster(model_level(backend("a"), backend("b")))
    uid = created["metadata"]["uid"]
    await converged(cluster, reconciler)

    assert cluster.children() == TWO_BACKENDS
    owner = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "name": "m", "uid": uid,
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    for kind, names in ((MODEL_SERVING, ["m-a", "m-b"]), (MODEL_ROUTE, ["m"]), (AUTOSCALING_POLICY_BINDING, ["m"])):
        for name in names:
            child = cluster.get(kind, name)
            assert child is not None
            assert child["metadata"]["ownerReferences"] == [owner]
            labels = child["metadata"]["labels"]
            assert labels["workload.serving.volcano.sh/managed-by"] == "workload.serving.volcano.sh"
            assert labels["workload.serving.volcano.sh/model-uid"] == uid
            assert labels["registry.volcano.sh/managed-by"] == "registry.volcano.sh"
            assert labels["workload.serving.volcano.sh/revision"]

    conditions = cluster.conditions()
    assert [c for c in conditions] == ["Initialized", "Active", "Failed", "UpToDate"]
    assert conditions["Initialized"]["status"] == "True"
    assert conditions["Initialized"]["observedGeneration"] == 1
    assert conditions["Active"]["status"] == "False"
    assert conditions["Active"]["message"] == "ModelBooster not ready yet: backends not available: a, b"
    assert conditions["Failed"]["status"] == "False"
    status = (cluster.get(MODEL_BOOSTER, "m") or {})["status"]
    assert status["observedGeneration"] == 1
    assert status["backendStatuses"] == [{"name": "a", "replicas": 0}, {"name": "b", "replicas": 0}]
    assert status["backendCount"] == 2
    assert backends_column(cluster) == 2

    # Exactly one create per child, one status write, one Created event.
    assert child_writes(reconciler) == sorted(
        [("create", "modelservings", "m-a"), ("create", "modelservings", "m-b"), ("create", "modelservers", "m-a"),
         ("create", "modelservers", "m-b"), ("create", "modelroutes", "m"), ("create", "autoscalingpolicies", "m"),
         ("create", "autoscalingpolicybindings", "m")]
    )  # fmt: skip
    status_writes = [e for e in reconciler.writes() if e.resource == "modelboosters"]
    assert [(e.verb, e.subresource) for e in status_writes] == [("patch", "status")]
    created_events = cluster.events("Created")
    assert len(created_events) == 1
    assert created_events[0]["type"] == "Normal"
    assert "ModelServing ns/m-a" in created_events[0]["message"]
    assert created_events[0]["involvedObject"]["uid"] == uid
    assert reconciler.metric("modelbooster_children_applied_total", kind="ModelServing", action="created") == 2
    assert reconciler.metric("modelbooster_boosters", condition="Initialized") == 1
    # Creation to Initialized, as the stored timestamps say.
    initialized = datetime.fromisoformat(conditions["Initialized"]["lastTransitionTime"])
    created_at = datetime.fromisoformat(created["metadata"]["creationTimestamp"])
    assert reconciler.metric("modelbooster_time_to_initialized_seconds_count") == 1
    elapsed = (initialized - created_at).total_seconds()
    assert reconciler.metric("modelbooster_time_to_initialized_seconds_sum") == elapsed


async def test_active_when_every_serving_is_available(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await converged(cluster, reconciler)
    initialized_at = cluster.conditions()["Initialized"]["lastTransitionTime"]

    await cluster.set_available("m-a", replicas=1)
    await eventually(lambda: "backends not available: b" in cluster.conditions()["Active"]["message"])
    assert cluster.condition("m", "Active") == "False"

    await cluster.set_available("m-b", replicas=2)
    await eventually(lambda: cluster.condition("m", "Active") == "True")
    conditions = cluster.conditions()
    assert conditions["Active"]["reason"] == "ModelAvailable"
    assert conditions["Initialized"]["lastTransitionTime"] == initialized_at
    assert reconciler.metric("modelbooster_time_to_initialized_seconds_count") == 1  # observed once, not per write
    status = (cluster.get(MODEL_BOOSTER, "m") or {})["status"]
    assert status["backendStatuses"] == [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 2}]

    await cluster.set_available("m-b", replicas=2, available=False)
    await eventually(lambda: cluster.condition("m", "Active") == "False")


async def test_a_spec_edit_writes_only_the_children_it_changes(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(model_level(backend("a", routeWeight=50), backend("b", routeWeight=50)))
    await converged(cluster, reconciler)
    serving_rv = (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"]
    cluster.fake.requests.clear()

    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0]["routeWeight"] = 80
    await cluster.replace_spec("m", spec)
    await eventually(lambda: cluster.conditions()["Failed"].get("observedGeneration") == 2)
    await converged(cluster, reconciler)

    assert child_writes(reconciler) == [("patch", "modelroutes", "m")]
    route = cluster.get(MODEL_ROUTE, "m") or {}
    weights = [t["weight"] for t in route["spec"]["rules"][0]["targetModels"]]
    assert weights == [80, 50]
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"] == serving_rv
    assert [e["reason"] for e in cluster.events("Updated")] == ["Updated"]


async def test_removing_a_backend_prunes_its_children(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(booster("m", backend("a"), backend("b")))
    await converged(cluster, reconciler)
    assert cluster.names(MODEL_SERVING) == ["m-a", "m-b"]

    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"] = spec["backends"][:1]
    await cluster.replace_spec("m", spec)
    await eventually(lambda: cluster.names(MODEL_SERVING) == ["m-a"])
    await converged(cluster, reconciler)
    assert cluster.names(MODEL_SERVER) == ["m-a"]
    route = cluster.get(MODEL_ROUTE, "m") or {}
    assert [t["modelServerName"] for t in route["spec"]["rules"][0]["targetModels"]] == ["m-a"]
    deleted = cluster.events("Deleted")
    assert len(deleted) == 1
    assert "ModelServing m-b" in deleted[0]["message"]
    # The status write ends the reconcile that pruned; wait for it rather than race it.
    await eventually(lambda: (cluster.get(MODEL_BOOSTER, "m") or {})["status"].get("observedGeneration") == 2)
    assert (cluster.get(MODEL_BOOSTER, "m") or {})["status"]["backendCount"] == 1
    assert backends_column(cluster) == 1


async def test_switching_autoscaling_level_prunes_the_old_policy_objects(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await converged(cluster, reconciler)
    assert cluster.names(AUTOSCALING_POLICY) == ["m"]

    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    policy = spec.pop("autoscalingPolicy")
    spec.pop("costExpansionRatePercent", None)
    for item in spec["backends"]:
        item.pop("scaleToZeroGracePeriod", None)
        item.pop("scalingCost", None)
    spec["backends"][0]["autoscalingPolicy"] = policy
    spec["backends"][1]["maxReplicas"] = spec["backends"][1]["minReplicas"]
    await cluster.replace_spec("m", spec)
    await eventually(lambda: cluster.names(AUTOSCALING_POLICY) == ["m-a"])
    await eventually(lambda: cluster.names(AUTOSCALING_POLICY_BINDING) == ["m-a"])
    await converged(cluster, reconciler)
    assert cluster.condition("m", "Failed") == "False"


async def test_hand_edits_of_owned_fields_are_reverted_and_others_left_alone(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    original = (cluster.get(MODEL_SERVER, "m-a") or {})["spec"]["workloadPort"]

    await cluster.patch(MODEL_SERVER, "m-a", {"spec": {"workloadPort": {"port": 9999}}})
    await eventually(lambda: (cluster.get(MODEL_SERVER, "m-a") or {})["spec"]["workloadPort"] == original)

    cluster.fake.requests.clear()
    await cluster.patch(MODEL_SERVER, "m-a", {"metadata": {"labels": {"team": "blue"}}})
    await quiet(0.3)
    assert child_writes(reconciler) == []
    assert (cluster.get(MODEL_SERVER, "m-a") or {})["metadata"]["labels"]["team"] == "blue"


async def test_deleted_children_are_recreated(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    old_uid = (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["uid"]
    await cluster.delete(MODEL_SERVING, "m-a")
    await cluster.delete(MODEL_ROUTE, "m")
    await eventually(lambda: cluster.get(MODEL_ROUTE, "m") is not None)
    recreated = await eventually(lambda: cluster.get(MODEL_SERVING, "m-a"))
    assert recreated["metadata"]["uid"] != old_uid


async def test_an_invalid_object_is_failed_with_the_webhook_message_and_nothing_is_written(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    # Bypassed the webhook: no autoscaling, yet minReplicas != maxReplicas (the CRD schema allows it).
    cluster.create_booster(booster("m", backend("a", minReplicas=1, maxReplicas=3)))
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    failed = cluster.conditions()["Failed"]
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"].startswith("validation failed:\n  - spec.backends[0]")
    assert "minReplicas and maxReplicas must be equal when no autoscaling is set" in failed["message"]
    assert cluster.condition("m", "Initialized") == "False"
    # The column still shows what the user asked for, read from the raw spec.
    assert backends_column(cluster) == 1
    await quiet(0.3)
    assert child_writes(reconciler) == []
    assert all(names == [] for names in cluster.children().values())
    warnings = cluster.events("InvalidSpec")
    assert len(warnings) == 1
    assert warnings[0]["type"] == "Warning"
    assert reconciler.metric("controller_runtime_terminal_reconcile_errors_total", controller="modelbooster") >= 1

    # Recovery: fixing the spec clears Failed and creates the children.
    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0]["maxReplicas"] = 1
    await cluster.replace_spec("m", spec)
    await eventually(lambda: cluster.condition("m", "Failed") == "False")
    assert cluster.condition("m", "Initialized") == "True"
    assert cluster.names(MODEL_SERVING) == ["m-a"]
    assert cluster.conditions()["Failed"]["observedGeneration"] == 2


async def test_a_no_op_resync_writes_nothing(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(model_level(backend("a"), backend("b")))
    cluster.create_booster({**booster("n", backend("x")), "metadata": {"name": "n", "namespace": "ns"}})
    await converged(cluster, reconciler)
    await converged(cluster, reconciler, "n")
    await cluster.set_available("m-a")
    await cluster.set_available("m-b")
    await eventually(lambda: cluster.condition("m", "Active") == "True")
    await quiet(0.3)
    controller = reconciler.manager.controllers[0]
    before = reconciler.metric("controller_runtime_reconcile_total", controller="modelbooster", result="success")
    cluster.fake.requests.clear()

    for _ in range(3):
        controller.enqueue_all()  # what the periodic resync does
        await eventually(lambda: len(controller.queue) == 0 and not controller.queue.processing())
    after = reconciler.metric("controller_runtime_reconcile_total", controller="modelbooster", result="success")
    assert after - before >= 6  # the reconciles did run
    assert reconciler.writes() == []


async def test_deleting_the_model_booster_leaves_cleanup_to_garbage_collection(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    cluster.fake.requests.clear()
    await cluster.delete(MODEL_BOOSTER, "m")
    await cluster.fake.asettle()
    await quiet(0.3)
    assert all(names == [] for names in cluster.children().values())
    assert child_writes(reconciler) == []


async def test_what_was_kept_for_an_earlier_model_booster_of_the_name_goes_at_the_next_reconcile(
    cluster: Cluster, reconciler: RunningReconciler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleted and created anew between two reconciles, a ModelBooster is never seen gone: the reconcile that
    finds another uid under its key drops what was kept for the earlier one (docs/design/reconciler.md §2)."""
    created = cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    state = reconciler.process.registered_by(MODELBOOSTER).reconciler
    key = ObjectKey(NS, "m")
    state.known[key] = Known(uid="the-earlier-one", older=3)
    assert reconciler.metric("modelbooster_servings_older_rendering", namespace=NS) == 3
    forgotten: list[str] = []
    for store in (state.recorder, state.children.fit, state.lora):
        monkeypatch.setattr(store, "forget", forgotten.append)

    await state.reconcile(key)
    assert forgotten == ["the-earlier-one"] * 3  # Event repeat counts, schema-fit reports, LoRA state
    assert state.known[key] == Known(uid=created["metadata"]["uid"], older=0)
    assert reconciler.metric("modelbooster_servings_older_rendering", namespace=NS) == 0
