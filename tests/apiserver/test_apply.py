"""Server-side apply (application/apply-patch+yaml) with managed fields, as the reconciler uses it."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of, status_of
from tests.apiserver.widgets import API_VERSION, GROUP, PLURAL, VERSION, widget
from tests.fakeapi.server import FakeApiServer

APPLY = "application/apply-patch+yaml"


def apply(custom: Any, body: dict[str, Any], manager: str, *, force: bool | None = None, **kwargs: Any) -> Any:
    name = body["metadata"]["name"]
    return custom.patch_namespaced_custom_object_with_http_info(
        GROUP, VERSION, "default", PLURAL, name, body, field_manager=manager, force=force, _content_type=APPLY, **kwargs
    )


def read(custom: Any, name: str = "w1") -> dict[str, Any]:
    found: dict[str, Any] = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
    return found


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"].get("managedFields", [])}


def test_apply_that_creates_answers_201_and_the_generated_client_returns_none(custom: Any) -> None:
    assert (
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "w1", widget("w1", color="red"), field_manager="ctl", _content_type=APPLY
        )
        is None
    )
    data, code, _ = apply(custom, widget("w2"), "ctl")
    assert code == 201
    assert data is None  # the generated 37.x client maps only 200 to a body
    created = read(custom)
    assert created["spec"] == {"size": "small", "color": "red", "replicas": 1}
    assert managers(created) == {
        ("ctl", "Apply"): {"f:spec": {"f:color": {}, "f:size": {}}},
    }
    entry = created["metadata"]["managedFields"][0]
    assert entry["apiVersion"] == API_VERSION
    assert entry["fieldsType"] == "FieldsV1"


def test_reapplying_the_same_configuration_changes_nothing(custom: Any, widgets: FakeApiServer) -> None:
    apply(custom, widget("w1", color="red"), "ctl")
    before = read(custom)
    writes = widgets.api.store.write_count
    data, code, _ = apply(custom, widget("w1", color="red"), "ctl")
    assert code == 200
    assert data["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert widgets.api.store.write_count == writes
    events = custom.list_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        watch=True,
        resource_version=before["metadata"]["resourceVersion"],
        timeout_seconds=1,
        _preload_content=False,
    ).data
    assert events == b""


def test_changing_a_field_another_applier_owns_is_a_409_conflict(custom: Any) -> None:
    apply(custom, widget("w1", replicas=2), "alpha")
    with pytest.raises(ApiException) as caught:
        apply(custom, widget("w1", replicas=3), "beta")
    assert caught.value.status == 409
    body = status_of(caught.value)
    assert body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "alpha": .spec.replicas'
    assert body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alpha"', "field": ".spec.replicas"}
    ]


def test_applying_the_same_value_shares_ownership(custom: Any) -> None:
    apply(custom, widget("w1", replicas=2), "alpha")
    apply(custom, widget("w1", replicas=2), "beta")
    owners = managers(read(custom))
    assert owners[("alpha", "Apply")]["f:spec"]["f:replicas"] == {}
    assert owners[("beta", "Apply")]["f:spec"]["f:replicas"] == {}


def test_force_takes_ownership(custom: Any) -> None:
    apply(custom, widget("w1", replicas=2, color="red"), "alpha")
    apply(custom, widget("w1", replicas=3), "beta", force=True)
    current = read(custom)
    assert current["spec"]["replicas"] == 3
    owners = managers(current)
    assert "f:replicas" not in owners[("alpha", "Apply")]["f:spec"]
    assert owners[("beta", "Apply")] == {"f:spec": {"f:replicas": {}, "f:size": {}}}


def test_a_conflict_with_an_update_manager_names_its_version_and_time(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1", color="red"))
    with pytest.raises(ApiException) as caught:
        apply(custom, widget("w1", color="blue"), "ctl")
    message = message_of(caught.value)
    assert message.startswith(
        'Apply failed with 1 conflict: conflict with "OpenAPI-Generator" using example.fakeapi.io/v1 at 20'
    )
    assert message.endswith(": .spec.color")


def test_a_field_dropped_from_the_configuration_is_removed(custom: Any) -> None:
    apply(custom, widget("w1", color="red", tags=["a"]), "ctl")
    apply(custom, widget("w1", tags=["a"]), "ctl")
    assert read(custom)["spec"] == {"size": "small", "tags": ["a"], "replicas": 1}


def test_a_dropped_field_someone_else_owns_stays(custom: Any) -> None:
    """The reconciler sets replicas once and leaves them to the autoscaler afterwards."""
    apply(custom, widget("w1", replicas=2), "reconciler")
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"replicas": 5}}, field_manager="autoscaler"
    )
    apply(custom, widget("w1"), "reconciler")
    current = read(custom)
    assert current["spec"]["replicas"] == 5
    assert managers(current)[("autoscaler", "Update")] == {"f:spec": {"f:replicas": {}}}


def test_list_map_items_are_merged_by_key_and_owned_per_item(custom: Any) -> None:
    apply(custom, widget("w1", parts=[{"name": "a", "count": 2}]), "alpha")
    apply(custom, widget("w1", parts=[{"name": "b", "count": 3}]), "beta")
    assert read(custom)["spec"]["parts"] == [{"name": "a", "count": 2}, {"name": "b", "count": 3}]
    assert managers(read(custom))[("beta", "Apply")]["f:spec"]["f:parts"] == {
        'k:{"name":"b"}': {".": {}, "f:count": {}, "f:name": {}}
    }
    apply(custom, widget("w1", parts=[]), "alpha")
    assert read(custom)["spec"]["parts"] == [{"name": "b", "count": 3}]


def test_set_lists_are_unions_of_appliers(custom: Any) -> None:
    apply(custom, widget("w1", tags=["a", "b"]), "alpha")
    apply(custom, widget("w1", tags=["c"]), "beta")
    assert read(custom)["spec"]["tags"] == ["a", "b", "c"]


def test_apply_needs_a_field_manager(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "w1", widget("w1"), _content_type=APPLY
        )
    assert caught.value.status == 422
    assert message_of(caught.value) == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


def test_apply_of_status_through_the_subresource(custom: Any) -> None:
    apply(custom, widget("w1"), "ctl")
    body = {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "status": {"phase": "Ready"},
        "spec": {"size": "large"},
    }
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "w1", body, field_manager="ctl-status", _content_type=APPLY
    )
    current = read(custom)
    assert current["status"] == {"phase": "Ready"}
    assert current["spec"]["size"] == "small"
    status_entry = next(e for e in current["metadata"]["managedFields"] if e["manager"] == "ctl-status")
    assert status_entry["subresource"] == "status"
    assert status_entry["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_status_in_an_apply_to_the_main_resource_is_ignored(custom: Any) -> None:
    body = widget("w1")
    body["status"] = {"phase": "Ready"}
    apply(custom, body, "ctl")
    current = read(custom)
    assert "status" not in current
    assert "f:status" not in managers(current)[("ctl", "Apply")]


def test_apply_to_a_builtin_kind(core: Any) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1"}},
        "data": {"k": "v"},
    }
    core.patch_namespaced_config_map("c", "default", body, field_manager="ctl", _content_type=APPLY)
    current = core.read_namespaced_config_map("c", "default")
    assert current.data == {"k": "v"}
    entry = current.metadata.managed_fields[0]
    assert (entry.manager, entry.operation) == ("ctl", "Apply")
    assert entry.fields_v1 == {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}


def test_apply_with_a_different_name_than_the_url_is_400(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "other", widget("w1"), field_manager="ctl", _content_type=APPLY
        )
    assert caught.value.status == 400


def test_updates_take_ownership_of_what_they_change(core: Any) -> None:
    core.create_namespaced_config_map(
        "default",
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "1", "b": "2"}),
        field_manager="maker",
    )
    core.patch_namespaced_config_map("c", "default", {"data": {"b": "3"}}, field_manager="editor")
    entries = {e.manager: e.fields_v1 for e in core.read_namespaced_config_map("c", "default").metadata.managed_fields}
    assert entries == {"maker": {"f:data": {".": {}, "f:a": {}}}, "editor": {"f:data": {"f:b": {}}}}
