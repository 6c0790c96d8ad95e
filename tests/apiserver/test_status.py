"""The status subresource: the main endpoint ignores .status, /status ignores everything else."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.widgets import GADGET_CRD, GROUP, PLURAL, VERSION, widget
from tests.fakeapi.server import FakeApiServer


def test_status_sent_on_create_is_dropped(custom: Any) -> None:
    body = widget("w1")
    body["status"] = {"phase": "Ready"}
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert "status" not in created


def test_main_endpoint_ignores_status_and_status_endpoint_ignores_spec(custom: Any) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    with_status = dict(
        created, status={"phase": "Ready", "observedGeneration": 1}, spec={"size": "small", "replicas": 7}
    )
    after_status = custom.replace_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "w1", with_status)
    assert after_status["status"] == {"phase": "Ready", "observedGeneration": 1}
    assert after_status["spec"]["replicas"] == 1  # spec change through /status ignored
    assert after_status["metadata"]["generation"] == 1  # status writes never bump generation
    assert int(after_status["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])

    through_main = dict(after_status, status={"phase": "Broken"}, spec={"size": "small", "replicas": 2})
    after_main = custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", through_main)
    assert after_main["status"] == {"phase": "Ready", "observedGeneration": 1}
    assert after_main["spec"]["replicas"] == 2
    assert after_main["metadata"]["generation"] == 2


def test_status_patch_ignores_metadata_changes(custom: Any) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    patched = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "w1", {"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Ready"}}
    )
    assert patched["status"] == {"phase": "Ready"}
    assert "labels" not in patched["metadata"]


def test_status_of_a_missing_object_is_404(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        custom.get_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "nope")
    assert caught.value.status == 404


def test_kinds_without_a_status_subresource_have_no_status_endpoint(
    kube_client: Any, fake_apiserver: FakeApiServer
) -> None:
    fake_apiserver.register_crd(GADGET_CRD)
    api: Any = client.CustomObjectsApi(kube_client)
    api.create_cluster_custom_object(
        GROUP,
        VERSION,
        "gadgets",
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Gadget", "metadata": {"name": "g"}, "status": {"kept": True}},
    )
    # Without the subresource, status is an ordinary field of the object...
    assert api.get_cluster_custom_object(GROUP, VERSION, "gadgets", "g")["status"] == {"kept": True}
    # ...and there is no /status endpoint.
    with pytest.raises(ApiException) as caught:
        api.get_cluster_custom_object_status(GROUP, VERSION, "gadgets", "g")
    assert caught.value.status == 404


def test_pod_status_is_set_by_the_server_and_changed_only_through_status(core: Any) -> None:
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox:1.36")]),
        status=client.V1PodStatus(phase="Running"),
    )
    created = core.create_namespaced_pod("default", pod)
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "BestEffort"
    created.status.phase = "Running"
    created.status.pod_ip = "10.0.0.5"
    updated = core.replace_namespaced_pod_status("p", "default", created)
    assert updated.status.phase == "Running"
    assert updated.status.pod_ip == "10.0.0.5"
    listed = core.list_namespaced_pod("default", field_selector="status.phase=Running")
    assert [p.metadata.name for p in listed.items] == ["p"]
