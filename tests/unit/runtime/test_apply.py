"""The pure rules behind writing children: subset comparison, ownership, managedFields, apply bodies."""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.runtime.apply import (
    Desired,
    apply_body,
    child_matches,
    immutable_changed,
    is_controlled_by,
    is_subset,
    managed_fields_pruner,
    manager_owns,
)

OWNER = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "name": "m", "uid": "u1",
         "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def serving(replicas: int = 2, **extra_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "m-a", "namespace": "ns", "labels": {"rev": "1"}, "ownerReferences": [dict(OWNER)]},
        "spec": {"replicas": replicas, "template": {"roles": [{"name": "leader", "replicas": 1}]}, **extra_spec},
    }


def live_of(obj: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """What the API server would hold: our fields plus server-side metadata and defaults."""
    live = {**obj, "metadata": {**obj["metadata"], "uid": "c1", "resourceVersion": "7", **meta}}
    live["spec"] = {**obj["spec"], "recoveryPolicy": "RoleRecreate"}
    live["spec"]["template"] = {"roles": [{"name": "leader", "replicas": 1, "workerReplicas": 0}]}
    live["status"] = {"replicas": 5}
    return live


def test_subset_ignores_server_defaults_and_additions() -> None:
    assert is_subset({"a": 1, "b": {"c": [1, {"d": 2}]}}, {"a": 1, "x": 0, "b": {"c": [1, {"d": 2, "e": 3}]}})


def test_subset_detects_changed_missing_and_resized_values() -> None:
    assert not is_subset({"a": 1}, {"a": 2})
    assert not is_subset({"a": 1}, {})
    assert not is_subset({"l": [1, 2]}, {"l": [1, 2, 3]})
    assert not is_subset({"l": [{"n": 1}]}, {"l": [{"n": 2}]})


def test_subset_does_not_confuse_booleans_and_numbers() -> None:
    assert not is_subset({"a": True}, {"a": 1})
    assert not is_subset({"a": 0}, {"a": False})
    assert is_subset({"a": 1}, {"a": 1.0})


def test_child_matches_tolerates_other_owner_references() -> None:
    desired = serving()
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "zz"}
    live = live_of(desired, ownerReferences=[other, dict(OWNER)])
    assert child_matches(desired, live)


def test_child_matches_detects_a_hand_edit_of_a_field_we_own() -> None:
    desired = serving()
    live = live_of(desired)
    live["spec"]["template"]["roles"][0]["replicas"] = 3
    assert not child_matches(desired, live)


def test_child_matches_detects_a_removed_label() -> None:
    desired = serving()
    live = live_of(desired, labels={})
    assert not child_matches(desired, live)


def test_autoscaled_replicas_are_ignored_in_the_comparison() -> None:
    desired = serving(replicas=2)
    live = live_of(desired)
    live["spec"]["replicas"] = 9  # the autoscaler's choice
    assert not child_matches(desired, live)
    assert child_matches(desired, live, ignore=[("spec", "replicas")])


def test_controller_reference_decides_control() -> None:
    assert is_controlled_by(serving(), "u1")
    assert not is_controlled_by(serving(), "u2")
    orphan = serving()
    orphan["metadata"]["ownerReferences"] = [{**OWNER, "controller": False}]
    assert not is_controlled_by(orphan, "u1")


MANAGED = [
    {"manager": "modelbooster", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}},
    {"manager": "autoscaler", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
    {"manager": "modelbooster", "operation": "Apply", "fieldsV1": {"f:spec": {"f:template": {}}}},
]


def test_manager_owns_looks_at_the_apply_entry_of_that_manager_only() -> None:
    live = {"metadata": {"managedFields": MANAGED}}
    assert not manager_owns(live, manager="modelbooster", path=("spec", "replicas"))
    assert manager_owns(live, manager="modelbooster", path=("spec", "template"))
    assert manager_owns(live, manager="autoscaler", path=("spec", "replicas"))
    assert manager_owns(live, manager="modelbooster", path=("spec", "replicas"), operation="Update")


def test_pruner_keeps_only_the_ownership_bit_we_need_and_what_others_own_in_spec() -> None:
    prune = managed_fields_pruner(manager="modelbooster")
    entry = {"manager": "modelbooster", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:big": {}}}}
    owned = {"metadata": {"name": "x", "managedFields": [entry]}}
    pruned = prune(owned)
    assert pruned["metadata"]["managedFields"] == [
        {"manager": "modelbooster", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    ]
    assert manager_owns(pruned, manager="modelbooster", path=("spec", "replicas"))
    assert "managedFields" in owned["metadata"]  # the input is not modified
    not_owned = prune({"metadata": {"name": "x", "managedFields": MANAGED}})
    assert not_owned["metadata"]["managedFields"] == [MANAGED[1]]  # the autoscaler's, for foreign-field checks
    ours = prune({"metadata": {"name": "x", "managedFields": [MANAGED[0], MANAGED[2]]}})
    assert "managedFields" not in ours["metadata"]


def test_apply_body_leaves_out_foreign_replicas() -> None:
    desired = Desired(MODEL_SERVING, serving(replicas=2), foreign_after_create=(("spec", "replicas"),))
    live = live_of(desired.obj)
    live["spec"]["replicas"] = 7
    body = apply_body(desired, live, manager="modelbooster")
    assert "replicas" not in body["spec"]
    assert desired.obj["spec"]["replicas"] == 2  # desired untouched


def test_apply_body_keeps_the_live_replicas_while_our_apply_still_owns_them() -> None:
    desired = Desired(MODEL_SERVING, serving(replicas=2), foreign_after_create=(("spec", "replicas"),))
    live = live_of(desired.obj, managedFields=[
        {"manager": "modelbooster", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}}])  # fmt: skip
    live["spec"]["replicas"] = 4
    assert apply_body(desired, live, manager="modelbooster")["spec"]["replicas"] == 4


def test_apply_body_of_a_fully_owned_child_is_the_desired_object() -> None:
    desired = Desired(MODEL_SERVING, serving(replicas=2))
    assert apply_body(desired, live_of(desired.obj), manager="modelbooster") == desired.obj


def test_a_changed_immutable_field_asks_for_a_replacement_and_an_equal_one_does_not() -> None:
    route = {"metadata": {"name": "m"}, "spec": {"modelName": "new", "rules": []}}
    desired = Desired(kind=MODEL_SERVING, obj=route, immutable=(("spec", "modelName"),))
    assert immutable_changed(desired, {"metadata": {"name": "m"}, "spec": {"modelName": "old"}})
    assert not immutable_changed(desired, {"metadata": {"name": "m"}, "spec": {"modelName": "new", "x": 1}})
    assert not immutable_changed(Desired(kind=MODEL_SERVING, obj=route), {"spec": {"modelName": "old"}})
