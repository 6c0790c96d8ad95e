"""PATCH: JSON merge patch, JSON patch and strategic merge patch."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of, status_of
from tests.apiserver.widgets import GROUP, PLURAL, VERSION, widget
from tests.fakeapi import patch


def test_merge_patch_rfc7386() -> None:
    target = {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2]}
    assert patch.merge_patch(target, {"b": {"c": None, "x": 9}, "e": [3], "a": None}) == {
        "b": {"d": 3, "x": 9},
        "e": [3],
    }
    assert target == {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2]}  # the input is not changed


def test_merge_patch_is_the_default_for_custom_objects(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1", color="red", tags=["a"]))
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"color": None, "replicas": 3}}
    )
    assert patched["spec"] == {"size": "small", "replicas": 3, "tags": ["a"]}
    assert patched["metadata"]["generation"] == 2


def test_merge_patch_with_a_stale_resource_version_is_a_conflict(custom: Any) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"replicas": 2}})
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"replicas": 3}},
        )
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"


def test_json_patch(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1", tags=["a"]))
    patched = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w1",
        [
            {"op": "add", "path": "/spec/tags/-", "value": "b"},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
        ],
        _content_type="application/json-patch+json",
    )
    assert patched["spec"]["tags"] == ["a", "b"]
    assert patched["spec"]["replicas"] == 4


def test_a_failing_json_patch_test_op_is_422(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            [
                {"op": "test", "path": "/spec/replicas", "value": 9},
                {"op": "replace", "path": "/spec/replicas", "value": 2},
            ],
            _content_type="application/json-patch+json",
        )
    assert caught.value.status == 422
    # Worded as kube-apiserver v1.36.2 words it: the reason is not given.
    assert status_of(caught.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }


def test_strategic_merge_patch_is_refused_for_custom_resources(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "w1",
            {"spec": {"replicas": 2}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert caught.value.status == 415
    assert message_of(caught.value) == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


def test_configmap_patch_from_the_client_is_a_strategic_merge(core: Any) -> None:
    core.create_namespaced_config_map(
        "default",
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c", finalizers=["example.com/a"]), data={"a": "1"}),
    )
    patched = core.patch_namespaced_config_map(
        "c", "default", {"metadata": {"finalizers": ["example.com/b"]}, "data": {"b": "2"}}
    )
    # metadata.finalizers has patchStrategy=merge: a strategic patch adds to the list.
    assert patched.metadata.finalizers == ["example.com/a", "example.com/b"]
    assert patched.data == {"a": "1", "b": "2"}
    removed = core.patch_namespaced_config_map(
        "c", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a", "example.com/b"]}}
    )
    assert removed.metadata.finalizers is None


def test_strategic_merge_of_owner_references_by_uid() -> None:
    original = {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}
    result = patch.strategic_merge_patch(
        original,
        {
            "metadata": {
                "ownerReferences": [
                    {"uid": "2", "name": "B"},
                    {"uid": "3", "name": "c"},
                    {"uid": "1", "$patch": "delete"},
                ]
            }
        },
        plural="configmaps",
    )
    assert result["metadata"]["ownerReferences"] == [{"uid": "2", "name": "B"}, {"uid": "3", "name": "c"}]


def test_strategic_merge_of_pod_containers_by_name() -> None:
    original = {"spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}]}}
    result = patch.strategic_merge_patch(
        original, {"spec": {"containers": [{"name": "a", "env": [{"name": "F", "value": "2"}]}]}}, plural="pods"
    )
    assert result["spec"]["containers"] == [
        {"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}, {"name": "F", "value": "2"}]}
    ]


def test_patch_of_a_missing_object_is_404(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_config_map("nope", "default", {"data": {"a": "1"}})
    assert caught.value.status == 404


def test_force_on_a_non_apply_patch_is_422(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {}}, force=True)
    assert caught.value.status == 422
    assert message_of(caught.value) == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'
    )
