"""The path a user walks: apply an example, see the defaults, watch it become Initialized, let Kthena report
its ModelServings Available and watch it become Active, delete it and see the children collected.

Expected values are written from docs/design/api.md §6 (defaults), docs/design/synthesis.md §2 to §4
(children, owner references) and docs/design/reconciler.md §8 (conditions, backendStatuses), not taken from
the code.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.render import NAMESPACE, RELEASE, render
from tests.e2e.harness import FULLNAME, Cluster, raw_request, wait_for
from tests.e2e.user import (
    CHILD_KINDS,
    EXAMPLES,
    MODEL_SERVERS,
    MODEL_SERVINGS,
    backends_of,
    children_names,
    condition,
    create_booster,
    custom,
    delete_booster,
    get_object,
    load_example,
    mark_serving,
    wait_condition,
    wait_gone,
    watch_booster,
)

Obj = dict[str, Any]

# (example, JSON paths in the stored object -> the value the mutating webhook must have put or kept there).
# None: the field must be absent.
DEFAULTS: dict[str, dict[tuple[str | int, ...], Any]] = {
    "single-vllm-cpu.yaml": {
        ("backends", 0, "routeWeight"): 100,  # absent in the file
        ("backends", 0, "workers", 0, "type"): "server",
        ("backends", 0, "scaleToZeroGracePeriod"): None,  # only defaulted under model-level autoscaling
        ("costExpansionRatePercent",): None,
    },
    "two-backends-model-autoscaling-lora.yaml": {
        ("backends", 0, "routeWeight"): 70,  # explicit values are kept
        ("backends", 1, "routeWeight"): 30,
        ("backends", 0, "scaleToZeroGracePeriod"): "5m",
        ("backends", 1, "scaleToZeroGracePeriod"): "30s",  # model-level autoscaling: defaulted
        ("costExpansionRatePercent",): 150,
        ("autoscalingPolicy", "tolerancePercent"): 10,
        ("backends", 1, "workers", 0, "replicas"): 1,
        ("backends", 1, "workers", 0, "pods"): 1,
    },
    "backend-autoscaling.yaml": {
        ("backends", 0, "routeWeight"): 100,
        ("backends", 0, "autoscalingPolicy", "tolerancePercent"): 20,
        ("backends", 0, "scaleToZeroGracePeriod"): None,
    },
    "single-backend-kthena-v1.yaml": {
        # Kthena v1.0's shape: the workers and the scheduler Kthena v1.0 would have used are defaulted.
        ("backend", "workers", 0, "type"): "server",
        ("backend", "schedulerName"): "volcano",
        ("backend", "routeWeight"): None,
        ("backends",): None,
    },
    "single-backend-kthena-v04.yaml": {
        # Kthena v0.2-v0.4's shape: the range kept as written, no route weight, the scheduler defaulted.
        ("backend", "minReplicas"): 2,
        ("backend", "maxReplicas"): 2,
        ("backend", "schedulerName"): "volcano",
        ("backend", "replicas"): None,
        ("backends",): None,
    },
    "single-backend-autoscaling-kthena-v04.yaml": {
        # The model-level policy scales the one backend: its own default only, none of the optimizer's.
        ("autoscalingPolicy", "tolerancePercent"): 20,
        ("costExpansionRatePercent",): None,
        ("backend", "scaleToZeroGracePeriod"): None,
        ("backend", "maxReplicas"): 4,
    },
    "pd-single-backend-kthena-v04.yaml": {
        ("autoscalingPolicy", "tolerancePercent"): 10,
        ("backend", "workers", 1, "type"): "decode",
        ("costExpansionRatePercent",): None,
    },
    "single-sglang-gpu.yaml": {
        ("backends", 0, "routeWeight"): 100,
        ("backends", 0, "workers", 0, "type"): "server",
        ("backends", 0, "scaleToZeroGracePeriod"): None,
    },
    "pd-disaggregation-nixl.yaml": {
        ("backends", 0, "routeWeight"): 100,
        ("backends", 0, "workers", 0, "replicas"): 2,
        ("backends", 0, "workers", 1, "type"): "decode",
    },
}


def _at(obj: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, dict) else None
    return obj


def test_every_valid_example_is_covered() -> None:
    assert sorted(path.name for path in EXAMPLES.glob("*.yaml")) == sorted(DEFAULTS)


@pytest.mark.parametrize("example", sorted(DEFAULTS))
def test_apply_initialized_active_delete(cluster: Cluster, example: str) -> None:
    document = load_example(example)
    namespace, name = document["metadata"]["namespace"], document["metadata"]["name"]

    created = create_booster(cluster, document)
    for path, expected in DEFAULTS[example].items():
        assert _at(created["spec"], path) == expected, f"spec.{'.'.join(map(str, path))}"

    initialized = wait_condition(cluster, namespace, name, "Initialized", "True")
    uid = initialized["metadata"]["uid"]
    wanted = children_names(document)
    for kind, names in wanted.items():
        for child_name in names:
            child = get_object(cluster, kind, namespace, child_name)
            assert child is not None, f"{kind[1]} {child_name} missing after Initialized"
            refs = child["metadata"]["ownerReferences"]
            assert len(refs) == 1
            assert (refs[0]["kind"], refs[0]["name"], refs[0]["uid"]) == ("ModelBooster", name, uid)
            assert (refs[0]["controller"], refs[0]["blockOwnerDeletion"]) == (True, True)

    # No ModelServing reports Available yet: Active is False and names every backend.
    active = condition(wait_condition(cluster, namespace, name, "Active", "False"), "Active")
    assert active is not None
    backends = [backend["name"] for backend in backends_of(document)]
    for backend in backends:
        assert backend in active["message"]

    # Kthena's ModelServing controller reports the pods up, one backend at a time.
    for index, backend in enumerate(backends):
        mark_serving(cluster, namespace, f"{name}-{backend}", available=True, replicas=index + 2)
    done = wait_condition(cluster, namespace, name, "Active", "True")
    assert condition(done, "Failed") is None or condition(done, "Failed")["status"] == "False"  # type: ignore[index]
    statuses = {entry["name"]: entry["replicas"] for entry in done["status"]["backendStatuses"]}
    assert statuses == {backend: index + 2 for index, backend in enumerate(backends)}

    delete_booster(cluster, namespace, name)
    for kind, names in wanted.items():
        for child_name in names:
            wait_gone(cluster, kind, namespace, child_name)


def test_active_names_only_the_backends_not_yet_available(cluster: Cluster) -> None:
    document = load_example("two-backends-model-autoscaling-lora.yaml")
    document["metadata"].update(name="partial", namespace="e2e")
    create_booster(cluster, document)
    wait_condition(cluster, "e2e", "partial", "Initialized", "True")
    mark_serving(cluster, "e2e", "partial-a100", available=True, replicas=1)

    def only_l4_missing(obj: Obj) -> bool:
        active = condition(obj, "Active")
        return active is not None and active["status"] == "False" and "a100" not in active["message"]

    waiting = watch_booster(cluster, "e2e", "partial", only_l4_missing)
    assert "l4" in condition(waiting, "Active")["message"]  # type: ignore[index]

    # A ModelServing that stops being Available takes Active back to False.
    mark_serving(cluster, "e2e", "partial-l4", available=True, replicas=1)
    wait_condition(cluster, "e2e", "partial", "Active", "True")
    mark_serving(cluster, "e2e", "partial-a100", available=False, replicas=0)
    wait_condition(cluster, "e2e", "partial", "Active", "False")
    delete_booster(cluster, "e2e", "partial")
    wait_gone(cluster, MODEL_SERVINGS, "e2e", "partial-a100")


def test_children_are_restored_when_deleted_by_hand(cluster: Cluster) -> None:
    document = load_example("single-vllm-cpu.yaml")
    document["metadata"].update(name="restored", namespace="e2e")
    create_booster(cluster, document)
    wait_condition(cluster, "e2e", "restored", "Initialized", "True")
    first = get_object(cluster, MODEL_SERVERS, "e2e", "restored-cpu")
    assert first is not None
    custom(cluster).delete_namespaced_custom_object(MODEL_SERVERS[0], "v1alpha1", "e2e", MODEL_SERVERS[1],
                                                    "restored-cpu")  # fmt: skip

    back = wait_for(
        lambda: (
            (obj := get_object(cluster, MODEL_SERVERS, "e2e", "restored-cpu"))
            and obj["metadata"]["uid"] != first["metadata"]["uid"]
            and obj
        ),
        what="the deleted ModelServer to be recreated",
    )
    assert back["spec"] == first["spec"]
    delete_booster(cluster, "e2e", "restored")
    for kind in CHILD_KINDS:
        for child in children_names(document)[kind]:
            wait_gone(cluster, kind, "e2e", child)


def _images(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        found = {obj["image"]} if isinstance(obj.get("image"), str) else set()
        return found.union(*(_images(value) for value in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_images(value) for value in obj))
    return set()


def test_helm_upgrade_of_the_runtime_image_restarts_nothing_until_a_rollout_is_asked_for(cluster: Cluster) -> None:
    document = load_example("single-vllm-cpu.yaml")
    document["metadata"].update(name="upgraded", namespace="e2e")
    create_booster(cluster, document)
    wait_condition(cluster, "e2e", "upgraded", "Initialized", "True")
    before = get_object(cluster, MODEL_SERVINGS, "e2e", "upgraded-cpu")
    assert before is not None
    assert "ghcr.io/volcano-sh/runtime:latest" in _images(before["spec"])  # the chart's default

    # `helm upgrade --set engine.runtimeImage=...` rewrites the settings ConfigMap; the reconciler watches it, and
    # keeps the ModelServing's pod template (docs/design/reconciler.md §16) while counting it as older.
    upgraded = render({"engine": {"runtimeImage": "registry.example/runtime:v2"}}, release=RELEASE, namespace=NAMESPACE)
    config_map = upgraded.one("ConfigMap", f"{FULLNAME}-reconciler")
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{FULLNAME}-reconciler"
    try:
        raw_request(cluster.user, "PATCH", path, body={"data": config_map["data"]},
                    content_type="application/merge-patch+json")  # fmt: skip
        wait_condition(cluster, "e2e", "upgraded", "UpToDate", "False")
        kept = get_object(cluster, MODEL_SERVINGS, "e2e", "upgraded-cpu")
        assert kept is not None
        assert kept["spec"] == before["spec"]
        assert kept["metadata"]["generation"] == before["metadata"]["generation"]

        # The owner asks for the current rendering (what `modelbooster rollout upgraded -n e2e` writes).
        raw_request(cluster.user, "PATCH", "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/e2e/modelboosters/"
                    "upgraded", body={"metadata": {"annotations": {"modelbooster.io/rollout": "now"}}},
                    content_type="application/merge-patch+json")  # fmt: skip

        def rerendered() -> Obj | None:
            obj = get_object(cluster, MODEL_SERVINGS, "e2e", "upgraded-cpu")
            return obj if obj is not None and "registry.example/runtime:v2" in _images(obj["spec"]) else None

        after = wait_for(rerendered, what="the ModelServing to carry the upgraded runtime image")
        assert "ghcr.io/volcano-sh/runtime:latest" not in _images(after["spec"])
        assert after["metadata"]["uid"] == before["metadata"]["uid"]  # updated in place, not recreated
        wait_condition(cluster, "e2e", "upgraded", "UpToDate", "True")
    finally:
        original = cluster.rendered.one("ConfigMap", f"{FULLNAME}-reconciler")
        raw_request(cluster.user, "PATCH", path, body={"data": original["data"]},
                    content_type="application/merge-patch+json")  # fmt: skip
        delete_booster(cluster, "e2e", "upgraded")
