"""A ModelBooster in Kthena v0.2-v0.4's shape against the fake API server (docs/design/api.md §8): one
`spec.backend` with a replica range, scaled by the model-level `spec.autoscalingPolicy`. Its children are
Kthena v0.4.0's, by name; the autoscaler owns the ModelServing's replicas; dropping the policy removes the
autoscaling objects; moving to Kthena v1.0's `replicas` keeps the backend."""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.kinds import AUTOSCALING_POLICY_BINDING, MODEL_BOOSTER, MODEL_SERVING
from tests.reconciler.harness import NS, Cluster, RunningReconciler, eventually
from tests.reconciler.test_lifecycle import backends_column, converged

POLICY = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}


def ranged(*, low: int = 1, high: int = 3, **spec: Any) -> dict[str, Any]:
    """ModelBooster `m` whose one backend `a` has the replica range `low..high`; keywords are more spec fields."""
    one = {
        "name": "a",
        "type": "vLLM",
        "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "minReplicas": low,
        "maxReplicas": high,
        "workers": [{"type": "server", "image": "vllm/vllm-openai:v0.10.1", "replicas": 1, "pods": 1}],
    }
    return {
        "apiVersion": MODEL_BOOSTER.api_version,
        "kind": MODEL_BOOSTER.kind,
        "metadata": {"name": "m", "namespace": NS},
        "spec": {"backend": one, **spec},
    }


def serving_replicas(cluster: Cluster) -> object:
    serving = cluster.get(MODEL_SERVING, "m-a")
    assert serving is not None
    return serving["spec"].get("replicas")


async def test_an_autoscaled_backend_gets_its_policy_and_binding_named_after_it(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(ranged(autoscalingPolicy=POLICY))
    await converged(cluster, reconciler)

    assert cluster.children() == {
        "ModelServing": ["m-a"],
        "ModelServer": ["m-a"],
        "ModelRoute": ["m"],
        "AutoscalingPolicy": ["m-a"],
        "AutoscalingPolicyBinding": ["m-a"],
    }
    binding = cluster.get(AUTOSCALING_POLICY_BINDING, "m-a")
    assert binding is not None
    scaling = binding["spec"]["scalingConfiguration"]
    assert (scaling["minReplicas"], scaling["maxReplicas"]) == (1, 3)
    assert scaling["target"]["targetRef"] == {"kind": "ModelServing", "name": "m-a"}
    assert serving_replicas(cluster) == 1  # created at minReplicas, then the autoscaler's

    # The autoscaler scales the ModelServing: the reconciler leaves its replicas alone.
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"replicas": 3}})
    await cluster.set_available("m-a", replicas=3)
    await eventually(lambda: cluster.condition("m", "Active") == "True", message="Active")
    await converged(cluster, reconciler)
    assert serving_replicas(cluster) == 3
    stored = cluster.get(MODEL_BOOSTER, "m")
    assert stored is not None
    assert set(stored["spec"]) >= {"backend", "autoscalingPolicy"}
    assert "backends" not in stored["spec"]
    assert "costExpansionRatePercent" not in stored["spec"]
    assert stored["status"]["backendStatuses"] == [{"name": "a", "replicas": 3}]
    assert backends_column(cluster) == 1


async def test_dropping_the_policy_prunes_the_autoscaling_objects_and_fixes_the_count(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(ranged(autoscalingPolicy=POLICY))
    await converged(cluster, reconciler)

    await cluster.replace_spec("m", ranged(low=2, high=2)["spec"])
    await eventually(lambda: cluster.children()["AutoscalingPolicy"] == [], message="policy pruned")
    await converged(cluster, reconciler)
    assert cluster.children()["AutoscalingPolicyBinding"] == []
    assert serving_replicas(cluster) == 2
    assert cluster.condition("m", "Failed") == "False"


async def test_moving_to_kthena_v1s_replicas_keeps_the_backend(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(ranged(low=2, high=2))
    await converged(cluster, reconciler)
    before = cluster.get(MODEL_SERVING, "m-a")
    assert before is not None

    spec = ranged()["spec"]
    del spec["backend"]["minReplicas"], spec["backend"]["maxReplicas"]
    spec["backend"]["replicas"] = 4
    await cluster.replace_spec("m", spec)
    await eventually(lambda: serving_replicas(cluster) == 4, message="four replicas")
    await converged(cluster, reconciler)
    after = cluster.get(MODEL_SERVING, "m-a")
    assert after is not None
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert cluster.condition("m", "Failed") == "False"
