"""Create, read, replace and list through the real `kubernetes` client: codes, Status bodies, metadata."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import status_of
from tests.apiserver.widgets import API_VERSION, GROUP, PLURAL, VERSION, widget
from tests.fakeapi.server import FakeApiServer

UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def create_widget(custom: Any, body: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    created: dict[str, Any] = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    return created


def test_post_answers_201_and_the_client_returns_the_object(custom: Any) -> None:
    data, code, _ = custom.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, "default", PLURAL, widget("w1")
    )
    assert code == 201
    assert data["metadata"]["name"] == "w1"
    assert data["metadata"]["namespace"] == "default"
    assert UID.match(data["metadata"]["uid"])
    assert TIMESTAMP.match(data["metadata"]["creationTimestamp"])
    assert data["metadata"]["generation"] == 1
    assert int(data["metadata"]["resourceVersion"]) > 0
    assert data["spec"] == {"size": "small", "replicas": 1}  # replicas defaulted from the schema


def test_get_returns_what_was_stored(custom: Any) -> None:
    created = create_widget(custom, widget("w1", color="red"))
    fetched = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert fetched == created


def test_create_of_an_existing_name_is_409_already_exists(custom: Any) -> None:
    create_widget(custom, widget("w1"))
    with pytest.raises(ApiException) as caught:
        create_widget(custom, widget("w1"))
    assert caught.value.status == 409
    assert status_of(caught.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'widgets.example.fakeapi.io "w1" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "w1", "group": "example.fakeapi.io", "kind": "widgets"},
        "code": 409,
    }


def test_get_of_a_missing_object_is_404_not_found(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_config_map("nope", "default")
    assert caught.value.status == 404
    body = status_of(caught.value)
    assert body["reason"] == "NotFound"
    assert body["message"] == 'configmaps "nope" not found'
    assert body["details"] == {"name": "nope", "kind": "configmaps"}


def test_replace_with_a_stale_resource_version_is_409_conflict(custom: Any) -> None:
    created = create_widget(custom, widget("w1"))
    first = dict(created, spec={"size": "small", "replicas": 2})
    updated = custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", first)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = dict(created, spec={"size": "small", "replicas": 3})
    with pytest.raises(ApiException) as caught:
        custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", stale)
    assert caught.value.status == 409
    body = status_of(caught.value)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on widgets.example.fakeapi.io "w1": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_replace_of_a_custom_resource_without_resource_version_is_422(custom: Any) -> None:
    create_widget(custom, widget("w1"))
    with pytest.raises(ApiException) as caught:
        custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", widget("w1", replicas=4))
    assert caught.value.status == 422
    assert status_of(caught.value)["message"] == (
        'widgets.example.fakeapi.io "w1" is invalid: metadata.resourceVersion: Invalid value: 0: '
        "must be specified for an update"
    )


def test_unconditional_update_is_allowed_for_configmaps(core: Any) -> None:
    core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "1"})
    )
    replaced = core.replace_namespaced_config_map(
        "c", "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "2"})
    )
    assert replaced.data == {"a": "2"}


def test_generation_moves_only_when_the_spec_changes(custom: Any) -> None:
    created = create_widget(custom, widget("w1"))
    labelled = dict(created, metadata=dict(created["metadata"], labels={"team": "a"}))
    after_labels = custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", labelled)
    assert after_labels["metadata"]["generation"] == 1
    assert after_labels["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    respecced = dict(after_labels, spec={"size": "small", "replicas": 5})
    after_spec = custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", respecced)
    assert after_spec["metadata"]["generation"] == 2


def test_an_update_that_changes_nothing_is_not_a_write(custom: Any, widgets: FakeApiServer) -> None:
    created = create_widget(custom, widget("w1"))
    writes_before = widgets.api.store.write_count
    again = custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", created)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert widgets.api.store.write_count == writes_before


def test_resource_version_is_one_counter_across_kinds(custom: Any, core: Any) -> None:
    first = create_widget(custom, widget("w1"))
    cm = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    second = create_widget(custom, widget("w2"))
    versions = [int(first["metadata"]["resourceVersion"]), int(cm.metadata.resource_version)]
    versions.append(int(second["metadata"]["resourceVersion"]))
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


def test_list_carries_the_current_resource_version_and_items_in_name_order(custom: Any) -> None:
    for name in ("b", "a", "c"):
        create_widget(custom, widget(name))
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert listed["kind"] == "WidgetList"
    assert listed["apiVersion"] == API_VERSION
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b", "c"]
    assert all(i["kind"] == "Widget" for i in listed["items"])
    newest = max(int(i["metadata"]["resourceVersion"]) for i in listed["items"])
    assert int(listed["metadata"]["resourceVersion"]) >= newest


def test_items_of_builtin_lists_carry_no_kind(core: Any, kube_client: Any) -> None:
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    raw = core.list_namespaced_config_map("default", _preload_content=False)
    body = json.loads(raw.data)
    assert body["kind"] == "ConfigMapList"
    assert "kind" not in body["items"][0]
    assert "apiVersion" not in body["items"][0]


def test_list_across_namespaces(custom: Any, widgets: FakeApiServer) -> None:
    widgets.create_namespace("team-a")
    create_widget(custom, widget("w1", namespace="team-a"), namespace="team-a")
    create_widget(custom, widget("w2"))
    listed = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listed["items"]] == [
        ("default", "w2"),
        ("team-a", "w1"),
    ]


def test_pagination_with_limit_and_continue(core: Any) -> None:
    for index in range(5):
        core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"c{index}")))
    first = core.list_namespaced_config_map("default", limit=2)
    assert [i.metadata.name for i in first.items] == ["c0", "c1"]
    assert first.metadata.remaining_item_count == 3
    second = core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    assert [i.metadata.name for i in second.items] == ["c2", "c3"]
    third = core.list_namespaced_config_map("default", limit=2, _continue=second.metadata._continue)
    assert [i.metadata.name for i in third.items] == ["c4"]
    assert third.metadata._continue is None


def test_generate_name_gets_a_random_suffix(core: Any) -> None:
    created = core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="job-"))
    )
    assert re.fullmatch(r"job-[bcdfghjklmnpqrstvwxz2456789]{5}", created.metadata.name)


def test_namespace_must_exist(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("missing", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    assert caught.value.status == 404
    assert status_of(caught.value)["message"] == 'namespaces "missing" not found'


def test_resource_version_on_create_is_refused_like_the_real_server(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c", resource_version="12"))
        )
    assert caught.value.status == 500
    assert status_of(caught.value)["message"] == "resourceVersion should not be set on objects to be created"


def test_invalid_name_is_422_with_the_dns_subdomain_message(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Bad_Name")))
    assert caught.value.status == 422
    body = status_of(caught.value)
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain '
        "must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["details"]["causes"][0]["reason"] == "FieldValueInvalid"


def test_bad_label_value_is_rejected(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c", labels={"app": "no spaces"}))
        )
    assert caught.value.status == 422
    assert (
        'metadata.labels: Invalid value: "no spaces": a valid label must be an empty string'
        in status_of(caught.value)["message"]
    )


def test_dry_run_create_validates_but_stores_nothing(custom: Any) -> None:
    data, code, _ = custom.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, "default", PLURAL, widget("w1"), dry_run="All"
    )
    assert code == 201
    assert data["metadata"]["uid"]
    assert "resourceVersion" not in data["metadata"]
    with pytest.raises(ApiException) as caught:
        custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert caught.value.status == 404


def test_name_in_the_body_must_match_the_url(core: Any) -> None:
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a")))
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("a", "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="b")))
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == "the name of the object (b) does not match the name on the URL (a)"


def test_custom_resources_are_served_in_every_version(custom: Any) -> None:
    create_widget(custom, widget("w1"))
    old = custom.get_namespaced_custom_object(GROUP, "v1beta1", "default", PLURAL, "w1")
    assert old["apiVersion"] == f"{GROUP}/v1beta1"
    assert old["spec"]["size"] == "small"


def test_cluster_scoped_custom_resources(kube_client: Any, fake_apiserver: FakeApiServer) -> None:
    from tests.apiserver.widgets import GADGET_CRD

    fake_apiserver.register_crd(GADGET_CRD)
    api: Any = client.CustomObjectsApi(kube_client)
    body = {"apiVersion": API_VERSION, "kind": "Gadget", "metadata": {"name": "g", "namespace": "ignored"}}
    created = api.create_cluster_custom_object(GROUP, VERSION, "gadgets", body)
    assert "namespace" not in created["metadata"]
    assert api.get_cluster_custom_object(GROUP, VERSION, "gadgets", "g")["metadata"]["name"] == "g"


def test_missing_kind_on_a_custom_resource_is_400(custom: Any) -> None:
    body = widget("w1")
    del body["kind"]
    with pytest.raises(ApiException) as caught:
        create_widget(custom, body)
    assert caught.value.status == 400
    assert status_of(caught.value)["message"].startswith("Object 'Kind' is missing in '")


def test_field_validation_warnings_are_sorted_and_sent_with_a_refusal_too(custom: Any) -> None:
    """As kube-apiserver v1.36.2 does: the pruned paths in order, also on a 422."""
    body = widget("w1", size="huge")
    body["extra"] = 1
    body["spec"]["unknown"] = 2
    _, _, headers = custom.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, "default", PLURAL, {**widget("w2"), "extra": 1, "spec": {"size": "small", "unknown": 2}}
    )
    assert headers.getlist("Warning") == [
        '299 - "unknown field \\"extra\\""',
        '299 - "unknown field \\"spec.unknown\\""',
    ]
    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert caught.value.status == 422
    assert caught.value.headers.getlist("Warning") == [
        '299 - "unknown field \\"extra\\""',
        '299 - "unknown field \\"spec.unknown\\""',
    ]


def test_an_empty_annotation_name_part_breaks_two_rules(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c", annotations={"a/": "v"}))
        )
    causes = status_of(caught.value)["details"]["causes"]
    assert [c["message"].split(": ", 2)[2][:30] for c in causes] == [
        "name part must be non-empty",
        "name part must consist of alph",
    ]


def test_status_details_leave_an_empty_name_out(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    with pytest.raises(ApiException) as caught:
        custom.delete_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "w1", body={"propagationPolicy": "Sometimes"}
        )
    unsupported = 'Unsupported value: "Sometimes": supported values: "Foreground", "Background", "Orphan", "nil"'
    assert status_of(caught.value)["details"] == {
        "group": "meta.k8s.io",
        "kind": "DeleteOptions",
        "causes": [{"reason": "FieldValueNotSupported", "message": unsupported, "field": "propagationPolicy"}],
    }


def test_custom_resource_lists_always_carry_a_continue_key(custom: Any, core: Any, kube_client: Any) -> None:
    """As kube-apiserver v1.36.2 serves them: empty on the last page of an unstructured list, absent in typed ones."""
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    assert custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["metadata"]["continue"] == ""
    response = kube_client.call_api(*kube_client.param_serialize("GET", "/api/v1/namespaces/default/configmaps"))
    response.read()
    assert "continue" not in json.loads(response.data)["metadata"]
