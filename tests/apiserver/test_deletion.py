"""Deletion: response bodies, finalizers, preconditions, garbage collection, namespaces and CRDs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of, status_of
from tests.apiserver.widgets import GROUP, PLURAL, VERSION, WIDGET_CRD, widget
from tests.fakeapi.server import FakeApiServer


def make(custom: Any, name: str, **metadata: Any) -> dict[str, Any]:
    body = widget(name)
    body["metadata"].update(metadata)
    created: dict[str, Any] = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    return created


def owner_ref(owner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        **extra,
    }


def exists(custom: Any, name: str) -> bool:
    try:
        custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def test_deleting_a_custom_resource_answers_a_success_status(custom: Any) -> None:
    created = make(custom, "w1")
    answer = custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "w1", "group": GROUP, "kind": PLURAL, "uid": created["metadata"]["uid"]},
    }
    assert not exists(custom, "w1")


def test_deleting_a_pod_answers_the_pod(core: Any) -> None:
    core.create_namespaced_pod(
        "default",
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="p"),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x")]),
        ),
    )
    deleted: Any = core.delete_namespaced_pod("p", "default")
    assert isinstance(deleted, client.V1Pod)
    assert deleted.metadata is not None
    assert deleted.metadata.name == "p"


def test_delete_of_a_missing_object_is_404(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "nope")
    assert caught.value.status == 404


def test_finalizers_hold_the_object_with_a_deletion_timestamp(custom: Any) -> None:
    created = make(custom, "w1", finalizers=["example.com/cleanup"])
    answer = custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert answer["metadata"]["deletionTimestamp"]
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 0
    assert answer["metadata"]["generation"] == created["metadata"]["generation"] + 1
    assert answer["metadata"]["finalizers"] == ["example.com/cleanup"]
    assert exists(custom, "w1")
    # Deleting again changes nothing.
    again = custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert again["metadata"]["resourceVersion"] == answer["metadata"]["resourceVersion"]


def test_no_new_finalizers_while_deleting(custom: Any) -> None:
    make(custom, "w1", finalizers=["example.com/a"])
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "w1", {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}
        )
    assert caught.value.status == 422
    assert message_of(caught.value) == (
        'Widget.example.fakeapi.io "w1" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added '
        'if the object is being deleted, found new finalizers []string{"example.com/b"}'
    )


def test_removing_the_last_finalizer_deletes_the_object(custom: Any) -> None:
    make(custom, "w1", finalizers=["example.com/a"])
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    answer = custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "w1", {"metadata": {"finalizers": None}}
    )
    assert answer["metadata"]["name"] == "w1"
    assert not exists(custom, "w1")


def test_unqualified_finalizer_names_are_invalid(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        make(custom, "w1", finalizers=["cleanup"])
    assert caught.value.status == 422
    assert (
        'metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it '
        "fully qualified" in message_of(caught.value)
    )


def test_delete_preconditions(custom: Any) -> None:
    created = make(custom, "w1")
    with pytest.raises(ApiException) as caught:
        custom.delete_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other")),
        )
    assert caught.value.status == 409
    assert message_of(caught.value) == (
        'Operation cannot be fulfilled on Widget.example.fakeapi.io "w1": the UID in the precondition (other) does not '
        f"match the UID in record ({created['metadata']['uid']}). The object might have been deleted and then recreated"
    )
    assert status_of(caught.value)["details"] == {"name": "w1", "group": GROUP, "kind": "Widget"}
    custom.delete_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w1",
        body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version=created["metadata"]["resourceVersion"])
        ),
    )
    assert not exists(custom, "w1")


def test_garbage_collection_deletes_children_of_a_deleted_owner(custom: Any, widgets: FakeApiServer, core: Any) -> None:
    owner = make(custom, "owner")
    make(custom, "child", ownerReferences=[owner_ref(owner, controller=True, blockOwnerDeletion=True)])
    core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm", owner_references=[owner_ref(owner)]))
    )
    make(custom, "unrelated")
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "owner")
    widgets.settle()
    assert not exists(custom, "child")
    assert core.list_namespaced_config_map("default").items == []
    assert exists(custom, "unrelated")


def test_a_child_with_another_live_owner_stays_and_loses_the_dangling_reference(
    custom: Any, widgets: FakeApiServer
) -> None:
    first = make(custom, "first")
    second = make(custom, "second")
    make(custom, "child", ownerReferences=[owner_ref(first), owner_ref(second)])
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "first")
    widgets.settle()
    child = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "child")
    assert child["metadata"]["ownerReferences"] == [owner_ref(second)]


def test_orphan_propagation_keeps_children_and_strips_the_reference(custom: Any, widgets: FakeApiServer) -> None:
    owner = make(custom, "owner")
    make(custom, "child", ownerReferences=[owner_ref(owner)])
    answer = custom.delete_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "owner", propagation_policy="Orphan"
    )
    assert answer["metadata"]["finalizers"] == ["orphan"]
    widgets.settle()
    assert not exists(custom, "owner")
    child = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "child")
    assert "ownerReferences" not in child["metadata"]


def test_foreground_propagation_deletes_children_first(custom: Any, widgets: FakeApiServer) -> None:
    owner = make(custom, "owner")
    make(custom, "child", ownerReferences=[owner_ref(owner, blockOwnerDeletion=True)], finalizers=["example.com/hold"])
    answer = custom.delete_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "owner", propagation_policy="Foreground"
    )
    assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]
    widgets.settle()
    # The child is being deleted but its own finalizer holds it, so the owner waits.
    child = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "child")
    assert child["metadata"]["deletionTimestamp"]
    assert exists(custom, "owner")
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "child", {"metadata": {"finalizers": None}}
    )
    widgets.settle()
    assert not exists(custom, "child")
    assert not exists(custom, "owner")


def test_an_object_whose_owner_never_existed_is_collected(custom: Any, widgets: FakeApiServer) -> None:
    ghost = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "name": "ghost",
        "uid": "00000000-0000-4000-8000-000000000000",
    }
    make(custom, "orphaned", ownerReferences=[ghost])
    widgets.settle()
    assert not exists(custom, "orphaned")


def test_deleting_a_namespace_deletes_its_content(core: Any, custom: Any, widgets: FakeApiServer) -> None:
    widgets.create_namespace("doomed")
    held = widget("w", namespace="doomed")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    custom.create_namespaced_custom_object(GROUP, VERSION, "doomed", PLURAL, held)
    core.create_namespaced_config_map("doomed", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    answer = json.loads(core.delete_namespace("doomed", _preload_content=False).data)
    assert answer["kind"] == "Namespace"  # namespaces are deleted gracefully: the answer is the namespace
    assert answer["status"]["phase"] == "Terminating"
    assert answer["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("doomed", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late")))
    assert caught.value.status == 403
    assert message_of(caught.value) == (
        'configmaps "late" is forbidden: unable to create new content in namespace doomed '
        "because it is being terminated"
    )
    widgets.settle()
    # The namespace waits for its content, which waits for its finalizer.
    assert core.read_namespace("doomed").status.phase == "Terminating"
    assert core.list_namespaced_config_map("doomed").items == []
    custom.patch_namespaced_custom_object(GROUP, VERSION, "doomed", PLURAL, "w", {"metadata": {"finalizers": None}})
    widgets.settle()
    with pytest.raises(ApiException) as gone:
        core.read_namespace("doomed")
    assert gone.value.status == 404
    assert custom.list_namespaced_custom_object(GROUP, VERSION, "doomed", PLURAL)["items"] == []


def test_deleting_a_crd_removes_its_resources_and_the_api(
    kube_client: Any, custom: Any, widgets: FakeApiServer
) -> None:
    make(custom, "w1")
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    raw = extensions.delete_custom_resource_definition(WIDGET_CRD["metadata"]["name"], _preload_content=False)
    answer = json.loads(raw.data)
    assert answer["metadata"]["deletionTimestamp"]
    assert answer["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    widgets.settle()
    with pytest.raises(ApiException) as caught:
        custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert caught.value.status == 404
    assert extensions.list_custom_resource_definition().items == []


def test_delete_collection_by_label(core: Any) -> None:
    for name, tier in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"tier": tier}))
        )
    core.delete_collection_namespaced_config_map("default", label_selector="tier=x")
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["c"]


def test_dry_run_delete_keeps_the_object(custom: Any) -> None:
    make(custom, "w1")
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", dry_run="All")
    assert exists(custom, "w1")


def test_watches_of_a_deleted_crd_end(kube_client: Any, custom: Any, widgets: FakeApiServer) -> None:
    import urllib3

    http = urllib3.PoolManager(retries=False)
    response = http.request(
        "GET",
        f"{widgets.url}/apis/{GROUP}/{VERSION}/{PLURAL}?watch=true",
        preload_content=False,
        timeout=urllib3.Timeout(connect=5, read=5),
    )
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    extensions.delete_custom_resource_definition(WIDGET_CRD["metadata"]["name"], _preload_content=False)
    widgets.settle()
    assert response.read() == b""  # the stream ends (it may have been empty: no objects existed)
    response.release_conn()


def test_a_finalizer_added_while_terminating_is_one_message_and_two_causes(custom: Any) -> None:
    """kube-apiserver v1.36.2 runs ObjectMeta update validation twice: the cause comes twice, the message once."""
    body = widget("w1")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}},
        )
    forbidden = (
        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers "
        '[]string{"example.com/new"}'
    )
    assert message_of(caught.value) == f'Widget.example.fakeapi.io "w1" is invalid: metadata.finalizers: {forbidden}'
    assert [c["message"] for c in status_of(caught.value)["details"]["causes"]] == [forbidden, forbidden]
