"""The external-replicas opt-in (shared/external_scaling.py) through the ModelBooster reconciler alone: what a
KEDA or HPA user gets, with no Inferno involved. Each ModelServing is created at minReplicas, no
AutoscalingPolicy is made, and replicas someone sets through /scale (between the bounds) are never reverted
— while a fixed backend's replicas still are."""

from __future__ import annotations

from reconciler.modelbooster.kinds import AUTOSCALING_POLICY, AUTOSCALING_POLICY_BINDING, MODEL_BOOSTER, MODEL_SERVING
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually, quiet


async def _converged(cluster: Cluster, reconciler: RunningReconciler) -> None:
    await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
    controller = reconciler.manager.controllers[0]
    await eventually(lambda: len(controller.queue) == 0 and not controller.queue.processing())
    await quiet(0.2)


def _replicas(cluster: Cluster, name: str) -> int:
    return int((cluster.get(MODEL_SERVING, name) or {})["spec"]["replicas"])


async def test_replicas_set_from_outside_stay_and_no_policy_is_made(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    obj = booster("m", backend("a", minReplicas=2, maxReplicas=5))
    obj["metadata"]["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true"}
    cluster.create_booster(obj)
    await _converged(cluster, reconciler)
    assert cluster.condition("m", "Failed") == "False"
    assert _replicas(cluster, "m-a") == 2  # created at minReplicas
    assert (cluster.names(AUTOSCALING_POLICY), cluster.names(AUTOSCALING_POLICY_BINDING)) == ([], [])

    # An HPA (or KEDA) scales the backend through the scale subresource, as it would on Kthena v1.0.
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"replicas": 4}}, subresource="scale", manager="hpa")
    # The ModelBooster changes and is reconciled again; the outside value stands.
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
    await _converged(cluster, reconciler)
    assert _replicas(cluster, "m-a") == 4


async def test_without_the_opt_in_a_fixed_backend_is_restored(cluster: Cluster, reconciler: RunningReconciler) -> None:
    cluster.create_booster(booster("m", backend("a", minReplicas=2, maxReplicas=2)))
    await _converged(cluster, reconciler)
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"replicas": 4}}, subresource="scale", manager="hpa")
    await eventually(lambda: _replicas(cluster, "m-a") == 2, message="replicas restored to the spec")
