"""Lean cache entries: lossless packing, loud reads of packed fields, and what the ModelBooster caches keep."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.modelbooster.cache import CHILD_KEEP, LAST_APPLIED, booster_transform, child_transform
from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING
from reconciler.modelbooster.status import serving_replicas
from reconciler.runtime.apply import child_matches, is_controlled_by, manager_owns
from reconciler.runtime.client import KubeClient, ObjectList
from reconciler.runtime.conditions import condition_status
from reconciler.runtime.controller import map_to_controller_owner
from reconciler.runtime.informer import Informer, label_index
from reconciler.runtime.lean import LeanObject, PackedFieldError, full_object, lean
from reconciler.runtime.source import ObjectKey
from shared.constants import LABEL_MODEL_UID

OWNER = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "name": "m", "uid": "u1",
         "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def live_serving(name: str = "m-a", rv: str = "7") -> dict[str, Any]:
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": "c1",
            "resourceVersion": rv,
            "generation": 3,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {LABEL_MODEL_UID: "u1", "rev": "1"},
            "ownerReferences": [dict(OWNER)],
            "managedFields": [
                {"manager": "modelbooster", "operation": "Apply", "apiVersion": "v1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}},
                {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:spec": {"f:paused": {}}}},
            ],
        },
        "spec": {"replicas": 2, "paused": False, "template": {"roles": [{"name": "leader", "replicas": 1}]}},
        "status": {
            "replicas": 2,
            "observedGeneration": 3,
            "conditions": [{"type": "Available", "status": "True", "reason": "AllGroupsReady"}],
        },
    }


def test_packing_loses_nothing() -> None:
    obj = live_serving()
    packed = lean(copy.deepcopy(obj), CHILD_KEEP)
    assert isinstance(packed, LeanObject)
    assert full_object(packed) == obj
    assert full_object(obj) is obj  # a plain object passes through


def test_reading_a_packed_field_fails_loudly() -> None:
    packed = lean(live_serving(), CHILD_KEEP)
    with pytest.raises(PackedFieldError, match="'spec' is not kept"):
        packed.get("spec")
    with pytest.raises(PackedFieldError):
        _ = packed["metadata"]["creationTimestamp"]
    with pytest.raises(PackedFieldError):
        _ = "observedGeneration" in packed["status"]
    # Kept fields read as usual, absent kept fields as absent.
    assert packed["metadata"]["name"] == "m-a"
    assert packed["metadata"].get("deletionTimestamp") is None


def test_kept_strings_are_shared_between_entries() -> None:
    first, second = lean(live_serving("a"), CHILD_KEEP), lean(live_serving("b"), CHILD_KEEP)
    first_uid = first["metadata"]["ownerReferences"][0]["uid"]
    assert first_uid is second["metadata"]["ownerReferences"][0]["uid"]
    assert next(iter(first["metadata"]["labels"])) is next(iter(second["metadata"]["labels"]))


def test_lean_entries_survive_deepcopy() -> None:
    packed = lean(live_serving(), CHILD_KEEP)
    copied = copy.deepcopy(packed)
    assert isinstance(copied, LeanObject)
    assert full_object(copied) == full_object(packed)
    with pytest.raises(PackedFieldError):
        copied.get("spec")


def test_a_child_entry_keeps_everything_event_handlers_and_status_read() -> None:
    """What the ModelBooster controller reads of a cached child without `full_object` must be kept: the event
    mapping, control checks, the model-uid index and the status behind the conditions."""
    cached = child_transform(field_manager="modelbooster")(live_serving())
    assert is_controlled_by(cached, "u1")
    assert list(map_to_controller_owner(MODEL_BOOSTER)("MODIFIED", None, cached)) == [ObjectKey("ns", "m")]
    assert list(label_index(LABEL_MODEL_UID)(cached)) == ["u1"]
    assert condition_status(cached["status"], "Available") == "True"
    assert serving_replicas(cached) == 2


def test_a_child_entry_still_compares_and_applies_like_the_live_object() -> None:
    """Drift detection and the replicas ownership bit work on the rebuilt object."""
    live = live_serving()
    full = full_object(child_transform(field_manager="modelbooster")(copy.deepcopy(live)))
    desired = {key: live[key] for key in ("apiVersion", "kind", "spec")}
    desired["metadata"] = {key: live["metadata"][key] for key in ("name", "namespace", "labels", "ownerReferences")}
    assert child_matches(desired, full)
    desired["spec"] = {**desired["spec"], "paused": True}
    assert not child_matches(desired, full)
    assert manager_owns(full, manager="modelbooster", path=("spec", "replicas"))
    # Of managedFields only the ownership bit of our apply is kept, and what others own in spec.
    assert [entry["manager"] for entry in full["metadata"]["managedFields"]] == ["modelbooster", "kubectl-edit"]


def test_a_booster_entry_drops_what_nothing_reads_and_packs_the_spec() -> None:
    booster = {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "m", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "generation": 2,
                     "annotations": {LAST_APPLIED: '{"a whole": "copy"}', "team": "x"},
                     "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
        "spec": {"backends": [{"name": "a"}]},
        "status": {"conditions": [{"type": "Initialized", "status": "True"}]},
    }
    cached = booster_transform(copy.deepcopy(booster))
    assert cached["metadata"]["annotations"] == {"team": "x"}
    assert cached["status"] == booster["status"]
    with pytest.raises(PackedFieldError):
        cached.get("spec")
    full = full_object(cached)
    assert full["spec"] == booster["spec"]
    assert "managedFields" not in full["metadata"]


class PagedClient(KubeClient):
    """Answers lists from fixed pages and remembers how big each answer was."""

    def __init__(self, pages: list[list[dict[str, Any]]]) -> None:
        self.pages = pages
        self.limits: list[int | None] = []

    async def list(self, kind: Any, **options: Any) -> ObjectList:
        self.limits.append(options.get("limit"))
        index = int(options.get("continue_token") or 0)
        token = str(index + 1) if index + 1 < len(self.pages) else None
        return ObjectList(items=self.pages[index], resource_version="100", continue_token=token)


async def test_the_initial_list_is_paged_and_each_item_transformed_once() -> None:
    pages = [[live_serving(f"s{page}-{item}", rv=str(page * 10 + item)) for item in range(3)] for page in range(3)]
    client = PagedClient(pages)
    seen: list[str] = []

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["name"])
        return lean(obj, CHILD_KEEP)

    informer = Informer(client, MODEL_SERVING, transform=transform, page_size=3)
    await informer._list(None)
    assert client.limits == [3, 3, 3]
    assert len(informer) == 9
    assert len(seen) == 9
    assert all(isinstance(obj, LeanObject) for obj in informer.objects())
    # A re-list (after a watch expired) does not transform again what the cache holds at that resourceVersion.
    await informer._list(None)
    assert len(seen) == 9


def test_the_echo_of_our_own_write_is_not_transformed_again() -> None:
    calls: list[str] = []

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(obj["metadata"]["resourceVersion"])
        return lean(obj, CHILD_KEEP)

    informer = Informer(KubeClient.for_url("http://127.0.0.1:9"), MODEL_SERVING, transform=transform)
    informer.write_through(live_serving(rv="7"))
    informer._apply_event("MODIFIED", live_serving(rv="7"))
    informer.write_through(live_serving(rv="6"))  # a stale response: neither cached nor transformed
    assert calls == ["7"]
