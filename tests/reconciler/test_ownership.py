"""Whose is what: foreign same-named objects are never taken over; the autoscaler's replicas are never fought."""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVER, MODEL_SERVING
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, Cluster, RunningReconciler, backend, booster, eventually, model_level, quiet


def foreign_server(name: str, *, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"team": "someone-else"}}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": MODEL_SERVER.api_version,
        "kind": "ModelServer",
        "metadata": metadata,
        "spec": {"inferenceEngine": "vLLM", "workloadSelector": {"matchLabels": {"app": "theirs"}},
                 "workloadPort": {"port": 1234}},
    }  # fmt: skip


async def test_a_same_named_object_we_do_not_control_is_never_taken_over(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    theirs = fake.create(foreign_server("m-a"))
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    failed = cluster.conditions()["Failed"]
    assert failed["reason"] == "OwnershipConflict"
    assert "ModelServer ns/m-a already exists and is not controlled by any owner" in failed["message"]
    assert "refusing to take it over" in failed["message"]
    assert cluster.condition("m", "Initialized") == "False"
    await eventually(lambda: len(cluster.events("OwnershipConflict")) == 1)
    # Everything else is in place; the foreign object is untouched.
    assert cluster.names(MODEL_SERVING) == ["m-a"]
    untouched = cluster.get(MODEL_SERVER, "m-a") or {}
    assert untouched["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    assert not any(e.name == "m-a" and e.resource == "modelservers" for e in reconciler.writes())

    # Once its owner removes it, the retry (with backoff) creates ours.
    await cluster.delete(MODEL_SERVER, "m-a")
    await eventually(lambda: cluster.condition("m", "Failed") == "False", within=5.0)
    assert cluster.condition("m", "Initialized") == "True"
    ours = cluster.get(MODEL_SERVER, "m-a") or {}
    assert ours["metadata"]["ownerReferences"][0]["name"] == "m"


async def test_a_child_controlled_by_another_model_booster_is_not_ours(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    other = cluster.create_booster(booster("other", backend("x")))
    owner = {"apiVersion": MODEL_BOOSTER.api_version, "kind": "ModelBooster", "name": "other",
             "uid": other["metadata"]["uid"], "controller": True}  # fmt: skip
    fake.create(foreign_server("m-a", owner=owner))
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    assert "controlled by ModelBooster other" in cluster.conditions()["Failed"]["message"]


async def test_autoscaled_replicas_are_set_once_and_then_left_to_the_autoscaler(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["replicas"] == 1  # minReplicas at creation

    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"replicas": 3}}, manager="autoscaler")
    # A spec change that rewrites the ModelServing (new image) keeps the autoscaler's choice.
    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0]["workers"][0]["image"] = "vllm/vllm-openai:v0.11.0"
    await cluster.replace_spec("m", spec)
    await eventually(lambda: _engine_image(cluster, "m-a") == "vllm/vllm-openai:v0.11.0", message="rolled")
    await quiet(0.3)
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["replicas"] == 3
    assert any(e.resource == "modelservings" and e.verb == "patch" for e in reconciler.writes())


async def test_turning_autoscaling_on_keeps_the_current_replicas(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(booster("m", backend("a", minReplicas=2, maxReplicas=2)))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    # Scaling by hand through the ModelBooster: our server-side apply changes spec.replicas and so becomes its
    # only owner (the create's ownership goes with the old value).
    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0].update(minReplicas=3, maxReplicas=3)
    await cluster.replace_spec("m", spec)
    await eventually(lambda: (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["replicas"] == 3)

    # Now autoscale the backend between 1 and 4: the apply leaves replicas out but must not drop them
    # (dropping a field our apply owned would reset it to the CRD default, 1).
    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0].update(minReplicas=1, maxReplicas=4, autoscalingPolicy={
        "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]})  # fmt: skip
    spec["backends"][0]["workers"][0]["image"] = "vllm/vllm-openai:v0.12.0"
    await cluster.replace_spec("m", spec)
    await eventually(lambda: _engine_image(cluster, "m-a") == "vllm/vllm-openai:v0.12.0")
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["spec"].get("replicas") == 3

    # The autoscaler takes over; our next rewrite leaves its value alone.
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"replicas": 4}}, manager="autoscaler")
    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0]["workers"][0]["image"] = "vllm/vllm-openai:v0.13.0"
    await cluster.replace_spec("m", spec)
    await eventually(lambda: _engine_image(cluster, "m-a") == "vllm/vllm-openai:v0.13.0")
    await quiet(0.3)
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["replicas"] == 4

    # And an idle resync writes nothing although replicas differ from minReplicas.
    cluster.fake.requests.clear()
    reconciler.manager.controllers[0].enqueue_all()
    await quiet(0.3)
    assert reconciler.writes() == []


async def test_without_autoscaling_replicas_are_ours_and_restored(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(booster("m", backend("a", minReplicas=2, maxReplicas=2)))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"replicas": 5}}, manager="someone")
    await eventually(lambda: (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["replicas"] == 2)


def _engine_image(cluster: Cluster, serving: str) -> str | None:
    obj = cluster.get(MODEL_SERVING, serving) or {}
    containers = obj["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"]
    return next((c["image"] for c in containers if c["name"] == "engine"), None)


async def test_two_model_boosters_generating_one_child_name_are_told_apart(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """`qwen-fixed` (backend `cpu`) and `qwen` (backend `fixed-cpu`) both generate `qwen-fixed-cpu`: the second
    one's Failed condition names the other ModelBooster and both backends, and says that deleting the child does
    not help (the other creates it again) but renaming a backend does."""
    cluster.create_booster(booster("qwen-fixed", backend("cpu")))
    await eventually(lambda: cluster.condition("qwen-fixed", "Initialized") == "True")
    cluster.create_booster(booster("qwen", backend("fixed-cpu")))
    await eventually(lambda: cluster.condition("qwen", "Failed") == "True")
    failed = cluster.conditions("qwen")["Failed"]
    assert failed["reason"] == "OwnershipConflict"
    for kind in ("ModelServing", "ModelServer"):
        assert (
            f'{kind} ns/qwen-fixed-cpu is generated by both ModelBooster "qwen-fixed" (its backend "cpu") and this '
            'ModelBooster\'s backend "fixed-cpu": a name belongs to one ModelBooster of a namespace, and '
            '"qwen-fixed" holds it; rename a backend of either ModelBooster, or one of them (deleting the '
            f'{kind} only lets "qwen-fixed" create it again)'
        ) in failed["message"]
    assert "kubectl delete" not in failed["message"]
    assert cluster.condition("qwen-fixed", "Failed") == "False"  # the first keeps its children
