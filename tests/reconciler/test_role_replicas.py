"""Role replicas of a disaggregated backend under the external-replicas opt-in (docs/design/reconciler.md §16,
docs/design/inferno.md §19): the reconciler creates each role at its worker's replicas and afterwards never
writes them: no revert, no drift, no rollout, no new template digest, whatever else it reconciles. Without
the opt-in a role's replicas are the ModelBooster's, and a change from outside is restored."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING
from reconciler.runtime.client import JSON_PATCH
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS
from shared.rollout import ANNOTATION_TEMPLATE
from tests.reconciler.harness import NS, Cluster, RunningReconciler, booster, child_writes, eventually, quiet


def pd_backend() -> dict[str, Any]:
    def worker(kind: str, role: str, replicas: int) -> dict[str, Any]:
        return {
            "type": kind, "image": "vllm/vllm-openai:v0.10.1", "replicas": replicas, "pods": 1,
            "config": {"kv-transfer-config": f'{{"kv_connector": "NixlConnector", "kv_role": "{role}"}}'},
        }  # fmt: skip

    return {
        "name": "pd", "type": "vLLMDisaggregated", "modelURI": "hf://Qwen/Qwen3-8B", "minReplicas": 1,
        "maxReplicas": 1, "workers": [worker("prefill", "kv_producer", 1), worker("decode", "kv_consumer", 1)],
    }  # fmt: skip


def pd_booster(*, opt_in: bool) -> dict[str, Any]:
    obj = booster("m", pd_backend())
    if opt_in:
        obj["metadata"]["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true"}
    return obj


async def converged(cluster: Cluster, reconciler: RunningReconciler) -> None:
    await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
    controller = reconciler.manager.controllers[0]
    await eventually(lambda: len(controller.queue) == 0 and not controller.queue.processing())
    await quiet(0.2)


def roles(cluster: Cluster) -> dict[str, int]:
    serving = cluster.get(MODEL_SERVING, "m-pd") or {}
    return {role["name"]: role["replicas"] for role in serving["spec"]["template"]["roles"]}


def without_role_replicas(serving: dict[str, Any]) -> dict[str, Any]:
    spec = dict(serving["spec"])
    template = dict(spec["template"])
    template["roles"] = [{k: v for k, v in role.items() if k != "replicas"} for role in template["roles"]]
    return {**spec, "template": template}


async def scale_role(cluster: Cluster, role: str, replicas: int, *, manager: str = "inferno") -> None:
    """What Inferno writes: a JSON patch of one role's replicas, tested against the role's name at its index."""
    serving = cluster.get(MODEL_SERVING, "m-pd") or {}
    index = [r["name"] for r in serving["spec"]["template"]["roles"]].index(role)
    path = f"/spec/template/roles/{index}"
    patch = [{"op": "test", "path": f"{path}/name", "value": role},
             {"op": "replace", "path": f"{path}/replicas", "value": replicas}]  # fmt: skip
    await cluster.client.patch(MODEL_SERVING, NS, "m-pd", patch, patch_type=JSON_PATCH, field_manager=manager)


async def test_with_the_opt_in_role_replicas_set_from_outside_stay(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(pd_booster(opt_in=True))
    await converged(cluster, reconciler)
    assert roles(cluster) == {"prefill": 1, "decode": 1}  # created at the workers' replicas
    before = cluster.get(MODEL_SERVING, "m-pd") or {}

    await scale_role(cluster, "prefill", 4)
    await scale_role(cluster, "decode", 2)
    writes = len(child_writes(reconciler))
    # The ModelBooster changes (a label: every child is reconciled again); the outside values stand.
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
    await converged(cluster, reconciler)
    after = cluster.get(MODEL_SERVING, "m-pd") or {}
    assert roles(cluster) == {"prefill": 4, "decode": 2}
    # No rollout: the pods' spec is what it was, the recorded template digest too, and the scaling was the
    # only change of the spec (the generation moved by the two role writes, not by the reconciler).
    assert without_role_replicas(after) == without_role_replicas(before)
    template = before["metadata"]["annotations"][ANNOTATION_TEMPLATE]
    assert after["metadata"]["annotations"][ANNOTATION_TEMPLATE] == template
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 2
    # Only the ModelServer and ModelRoute carry the label anew; the ModelServing's scaled roles are no drift
    # to remove: nothing patched it back.
    new_writes = child_writes(reconciler)[writes:]
    assert all(name != "m-pd" or verb == "apply" for verb, _, name in new_writes), new_writes
    assert cluster.events("ForeignFieldsRemoved") == []


async def test_role_replicas_are_kept_by_name_when_the_live_roles_are_reordered(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """Someone rewrote the roles list in the other order (and so owns it): its content is put back in ours,
    each role with the replicas it had, not the other role's."""
    cluster.create_booster(pd_booster(opt_in=True))
    await converged(cluster, reconciler)
    await scale_role(cluster, "prefill", 3)
    serving = cluster.get(MODEL_SERVING, "m-pd") or {}
    swapped = list(reversed(serving["spec"]["template"]["roles"]))
    await cluster.patch(MODEL_SERVING, "m-pd", {"spec": {"template": {"roles": swapped}}}, manager="kubectl-edit")
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
    await eventually(
        lambda: [r["name"] for r in (cluster.get(MODEL_SERVING, "m-pd") or {})["spec"]["template"]["roles"]]
        == ["prefill", "decode"],
        message="roles back in the rendered order",
    )
    await converged(cluster, reconciler)
    assert roles(cluster) == {"prefill": 3, "decode": 1}


async def test_without_the_opt_in_role_replicas_are_restored(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(pd_booster(opt_in=False))
    await converged(cluster, reconciler)
    await scale_role(cluster, "prefill", 4)
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
    await eventually(lambda: roles(cluster) == {"prefill": 1, "decode": 1}, message="role replicas restored")


async def test_a_foreign_field_in_the_roles_is_removed_and_the_scaled_replicas_stay(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """Someone adds a field inside a role's pod template (and so owns the atomic roles list): the merge patch
    that removes it replaces the list whole, carrying each role's live replicas, not the rendered ones."""
    cluster.create_booster(pd_booster(opt_in=True))
    await converged(cluster, reconciler)
    await scale_role(cluster, "decode", 5)
    serving = cluster.get(MODEL_SERVING, "m-pd") or {}
    changed = copy.deepcopy(serving["spec"]["template"]["roles"])
    changed[0]["entryTemplate"]["spec"]["hostNetwork"] = True
    await cluster.patch(MODEL_SERVING, "m-pd", {"spec": {"template": {"roles": changed}}}, manager="kubectl-edit")
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
    await eventually(lambda: cluster.events("ForeignFieldsRemoved"), message="the foreign field removed")
    await converged(cluster, reconciler)
    after = cluster.get(MODEL_SERVING, "m-pd") or {}
    assert "hostNetwork" not in after["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]
    assert roles(cluster) == {"prefill": 1, "decode": 5}


async def test_the_opt_in_withdrawn_after_a_rollout_brings_the_rendered_role_replicas_back(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """The roles were scaled, then the ModelServing rolled (an image change: our write is the latest), then the
    opt-in was withdrawn: the roles' replicas are the ModelBooster's again, without another rollout."""
    cluster.create_booster(pd_booster(opt_in=True))
    await converged(cluster, reconciler)
    await scale_role(cluster, "decode", 3)
    live = cluster.get(MODEL_BOOSTER, "m") or {}
    spec = copy.deepcopy(live["spec"])
    for worker in spec["backends"][0]["workers"]:
        worker["image"] = "vllm/vllm-openai:v0.10.2"
    await cluster.replace_spec("m", spec)
    await eventually(
        lambda: "v0.10.2" in str((cluster.get(MODEL_SERVING, "m-pd") or {})["spec"]["template"]["roles"]),
        message="the new image rolled out",
    )
    await converged(cluster, reconciler)
    assert roles(cluster) == {"prefill": 1, "decode": 3}  # the rollout kept the scaled replicas
    assert cluster.condition("m", "UpToDate") == "True", cluster.conditions("m")["UpToDate"]
    rolled = cluster.get(MODEL_SERVING, "m-pd") or {}
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"annotations": {ANNOTATION_EXTERNAL_REPLICAS: None}}})
    await eventually(lambda: roles(cluster) == {"prefill": 1, "decode": 1}, message="role replicas restored")
    await converged(cluster, reconciler)
    after = cluster.get(MODEL_SERVING, "m-pd") or {}
    assert without_role_replicas(after) == without_role_replicas(rolled)
    assert cluster.condition("m", "UpToDate") == "True", cluster.conditions("m")["UpToDate"]
