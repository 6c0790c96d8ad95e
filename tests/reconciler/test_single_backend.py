"""A ModelBooster in Kthena v1.0's single-backend shape against the fake API server (docs/design/api.md §8):
its children, its status, a route renamed by `spec.name`, and moves between the two shapes."""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_ROUTE, MODEL_SERVING
from tests.reconciler.harness import NS, Cluster, RunningReconciler, backend, eventually
from tests.reconciler.test_lifecycle import backends_column, converged


def single(backend_name: str = "a", **spec: Any) -> dict[str, Any]:
    """A v1.0-style ModelBooster `m` whose one backend is `backend_name`; keywords are more spec fields."""
    one = {
        "name": backend_name,
        "type": "vLLM",
        "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "replicas": 2,
        "workers": [{"type": "server", "image": "vllm/vllm-openai:v0.10.1", "replicas": 1, "pods": 1}],
    }
    return {
        "apiVersion": MODEL_BOOSTER.api_version,
        "kind": MODEL_BOOSTER.kind,
        "metadata": {"name": "m", "namespace": NS},
        "spec": {"backend": one, **spec},
    }


def route_of(cluster: Cluster) -> dict[str, Any]:
    route = cluster.get(MODEL_ROUTE, "m")
    assert route is not None
    return route


async def test_one_serving_one_server_one_route_and_the_shape_kept(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(single(name="qwen-chat"))
    await converged(cluster, reconciler)

    assert cluster.children() == {
        "ModelServing": ["m-a"],
        "ModelServer": ["m-a"],
        "ModelRoute": ["m"],
        "AutoscalingPolicy": [],
        "AutoscalingPolicyBinding": [],
    }
    serving = cluster.get(MODEL_SERVING, "m-a")
    assert serving is not None
    assert serving["spec"]["replicas"] == 2
    assert route_of(cluster)["spec"]["modelName"] == "qwen-chat"
    await cluster.set_available("m-a", replicas=2)
    await eventually(lambda: cluster.condition("m", "Active") == "True", message="Active")
    stored = cluster.get(MODEL_BOOSTER, "m")
    assert stored is not None
    assert "backends" not in stored["spec"]
    assert stored["spec"]["backend"]["name"] == "a"
    assert stored["status"]["backendStatuses"] == [{"name": "a", "replicas": 2}]
    assert backends_column(cluster) == 1


async def test_a_new_spec_name_replaces_the_route_whose_model_name_is_immutable(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(single(name="old-name"))
    await converged(cluster, reconciler)
    before = route_of(cluster)["metadata"]["uid"]

    await cluster.replace_spec("m", single(name="new-name")["spec"])
    await eventually(lambda: route_of(cluster)["spec"]["modelName"] == "new-name", message="route renamed")
    await converged(cluster, reconciler)
    assert route_of(cluster)["metadata"]["uid"] != before
    assert cluster.condition("m", "Failed") == "False"
    deletes = [e.name for e in reconciler.writes() if e.verb == "delete" and e.resource == "modelroutes"]
    assert deletes == ["m"]


async def test_adopting_several_backends_and_going_back_prunes_what_is_no_longer_wanted(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(single())
    await converged(cluster, reconciler)

    # The user adopts the multi-backend shape: `a` stays (one replica range now), `b` joins.
    await cluster.replace_spec("m", {"backends": [backend("a"), backend("b")]})
    await eventually(lambda: cluster.names(MODEL_SERVING) == ["m-a", "m-b"], message="two servings")
    await converged(cluster, reconciler)
    serving = cluster.get(MODEL_SERVING, "m-a")
    assert serving is not None
    assert serving["spec"]["replicas"] == 1
    targets = route_of(cluster)["spec"]["rules"][0]["targetModels"]
    assert [target["modelServerName"] for target in targets] == ["m-a", "m-b"]

    # And back to one backend, under another name: every child of `a` and `b` goes.
    await cluster.replace_spec("m", single("c")["spec"])
    await eventually(lambda: cluster.names(MODEL_SERVING) == ["m-c"], message="one serving")
    await converged(cluster, reconciler)
    assert cluster.children()["ModelServer"] == ["m-c"]
    assert route_of(cluster)["spec"]["modelName"] == "m"
    stored = cluster.get(MODEL_BOOSTER, "m")
    assert stored is not None
    assert stored["status"]["backendCount"] == 1


async def test_a_route_whose_deletion_is_held_is_replaced_once_it_is_gone(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(single(name="old-name"))
    await converged(cluster, reconciler)
    await cluster.patch(MODEL_ROUTE, "m", {"metadata": {"finalizers": ["example.com/hold"]}})

    await cluster.replace_spec("m", single(name="new-name")["spec"])
    await eventually(lambda: "deletion is pending" in cluster.conditions()["Failed"]["message"], message="waiting")
    assert route_of(cluster)["spec"]["modelName"] == "old-name"

    await cluster.patch(MODEL_ROUTE, "m", {"metadata": {"finalizers": None}})
    await eventually(lambda: (cluster.get(MODEL_ROUTE, "m") or {}).get("spec", {}).get("modelName") == "new-name",
                     within=10, message="replaced")  # fmt: skip
    await eventually(lambda: cluster.condition("m", "Failed") == "False", within=10, message="recovered")
