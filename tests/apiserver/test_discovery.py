"""Discovery, CRD registration through the API, and kubectl against the fake."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of
from tests.apiserver.widgets import GROUP, WIDGET_CRD
from tests.fakeapi.discovery import storage_version_hash
from tests.fakeapi.server import FakeApiServer


def get(kube_client: Any, path: str) -> dict[str, Any]:
    response = kube_client.call_api(*kube_client.param_serialize("GET", path))
    response.read()
    data: dict[str, Any] = json.loads(response.data)
    return data


def test_core_discovery(kube_client: Any, fake_apiserver: FakeApiServer) -> None:
    versions = get(kube_client, "/api")
    assert versions["kind"] == "APIVersions"
    assert versions["versions"] == ["v1"]
    resources = get(kube_client, "/api/v1")
    names = {r["name"] for r in resources["resources"]}
    assert {"configmaps", "secrets", "pods", "pods/status", "namespaces", "namespaces/status", "events"} <= names
    configmaps = next(r for r in resources["resources"] if r["name"] == "configmaps")
    assert configmaps == {
        "name": "configmaps",
        "singularName": "configmap",
        "namespaced": True,
        "kind": "ConfigMap",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["cm"],
    }


def test_custom_resources_appear_in_discovery_once_the_crd_exists(
    kube_client: Any, fake_apiserver: FakeApiServer
) -> None:
    groups = {g["name"] for g in get(kube_client, "/apis")["groups"]}
    assert GROUP not in groups
    assert {"coordination.k8s.io", "events.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io"} <= groups
    fake_apiserver.register_crd(WIDGET_CRD)
    group = next(g for g in get(kube_client, "/apis")["groups"] if g["name"] == GROUP)
    assert group["preferredVersion"] == {"groupVersion": f"{GROUP}/v1", "version": "v1"}
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    listed = get(kube_client, f"/apis/{GROUP}/v1")
    assert [(r["name"], r["kind"]) for r in listed["resources"]] == [
        ("widgets", "Widget"),
        ("widgets/status", "Widget"),
    ]
    assert listed["resources"][0]["shortNames"] == ["wd"]


def test_crds_are_created_listed_and_established_through_the_api(kube_client: Any) -> None:
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    created = extensions.create_custom_resource_definition(WIDGET_CRD)
    conditions = {c.type: c.status for c in created.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert created.status.accepted_names.kind == "Widget"
    assert created.status.stored_versions == ["v1"]
    assert [c.metadata.name for c in extensions.list_custom_resource_definition().items] == [
        WIDGET_CRD["metadata"]["name"]
    ]
    custom: Any = client.CustomObjectsApi(kube_client)
    assert custom.list_cluster_custom_object(GROUP, "v1", "widgets")["items"] == []


def test_an_invalid_crd_is_refused(kube_client: Any) -> None:
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    bad = json.loads(json.dumps(WIDGET_CRD))
    bad["metadata"]["name"] = "wrong.example.fakeapi.io"
    with pytest.raises(ApiException) as caught:
        extensions.create_custom_resource_definition(bad)
    assert caught.value.status == 422
    assert message_of(caught.value) == (
        'CustomResourceDefinition.apiextensions.k8s.io "wrong.example.fakeapi.io" is invalid: metadata.name: '
        'Invalid value: "wrong.example.fakeapi.io": must be spec.names.plural+"."+spec.group'
    )


def _get_raw(kube_client: Any, path: str) -> tuple[int, str, bytes]:
    response = kube_client.call_api(*kube_client.param_serialize("GET", path))
    response.read()
    return response.status, response.getheader("Content-Type") or "", response.data


@pytest.mark.parametrize(
    "path",
    [
        "/apis/nothing.example.com",
        "/apis/nothing.example.com/v1",
        "/apis/nothing.example.com/v1/things",
        "/apis/example.fakeapi.io/v9",
        "/apis/example.fakeapi.io/v1/namespaces/default/nothings",
        "/apis/example.fakeapi.io/v1/widgets/w1",  # a namespaced kind's object without its namespace
        "/nothing",
    ],
)
def test_unknown_paths_outside_the_legacy_group_are_a_plain_404(kube_client: Any, widgets: Any, path: str) -> None:
    """As kube-apiserver v1.36.2 answers them (its HTTP mux, not the API): no Status body to decode."""
    assert _get_raw(kube_client, path) == (404, "text/plain; charset=utf-8", b"404 page not found\n")


@pytest.mark.parametrize("path", ["/api/v1/nothings", "/api/v1/namespaces/default/nothings", "/api/v2"])
def test_unknown_paths_in_the_legacy_group_are_a_not_found_status(kube_client: Any, path: str) -> None:
    status, content_type, data = _get_raw(kube_client, path)
    assert (status, content_type) == (404, "application/json; charset=utf-8")
    assert json.loads(data)["message"] == "the server could not find the requested resource"


def test_version_endpoint(kube_client: Any) -> None:
    assert get(kube_client, "/version")["major"] == "1"


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
def test_kubectl_get_and_apply(kubeconfig_file: Path, fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    assert KUBECTL is not None
    fake_apiserver.register_crd(WIDGET_CRD)
    manifest = tmp_path / "widget.yaml"
    manifest.write_text(
        "apiVersion: example.fakeapi.io/v1\nkind: Widget\nmetadata:\n  name: from-kubectl\nspec:\n  size: large\n"
    )
    base = [KUBECTL, "--kubeconfig", str(kubeconfig_file), "--request-timeout=10s"]
    applied = subprocess.run(
        [*base, "apply", "--validate=false", "-f", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == "widget.example.fakeapi.io/from-kubectl created"
    listed = subprocess.run(
        [*base, "get", "widgets", "-o", "json"], capture_output=True, text=True, timeout=60, check=False
    )
    assert listed.returncode == 0, listed.stderr
    assert [i["metadata"]["name"] for i in json.loads(listed.stdout)["items"]] == ["from-kubectl"]
    again = subprocess.run(
        [*base, "apply", "--validate=false", "-f", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.stdout.strip() == "widget.example.fakeapi.io/from-kubectl unchanged"
    server_side = subprocess.run(
        [*base, "apply", "--server-side", "--validate=false", "-f", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert server_side.returncode == 0, server_side.stderr


def _widget_crd_with_scale() -> dict[str, Any]:
    crd: dict[str, Any] = json.loads(json.dumps(WIDGET_CRD))
    for version in crd["spec"]["versions"]:
        if version["name"] == "v1":
            version.setdefault("subresources", {})["scale"] = {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
            }
    return crd


def test_custom_resources_are_listed_as_kube_apiservers_discovery_controller_lists_them(
    kube_client: Any, fake_apiserver: FakeApiServer
) -> None:
    fake_apiserver.register_crd(_widget_crd_with_scale())
    listed = get(kube_client, f"/apis/{GROUP}/v1")["resources"]
    assert [(r["name"], r["kind"], r["verbs"]) for r in listed] == [
        ("widgets", "Widget", ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]),
        ("widgets/scale", "Scale", ["get", "patch", "update"]),
        ("widgets/status", "Widget", ["get", "patch", "update"]),
    ]
    scale = listed[1]
    assert (scale["group"], scale["version"]) == ("autoscaling", "v1")
    # The hash kube-apiserver's discovery shows for pods (v1) and Deployments (apps/v1), by the same function.
    assert storage_version_hash("", "v1", "Pod") == "xPOwRZ+Yhw8="
    assert storage_version_hash("apps", "v1", "Deployment") == "8aSe+NMegvE="
    assert listed[0]["storageVersionHash"] == storage_version_hash(GROUP, "v1", "Widget")
    # A version without a scale subresource lists none.
    assert [r["name"] for r in get(kube_client, f"/apis/{GROUP}/v1beta1")["resources"]] == ["widgets", "widgets/status"]


def test_custom_resources_leave_discovery_with_their_crd_and_lose_write_verbs_while_it_terminates(
    kube_client: Any, fake_apiserver: FakeApiServer
) -> None:
    """A CRD whose deletion waits on an instance's finalizer is Terminating: its resource is still listed, for
    reading and deleting only, and creates are refused; once the last instance is gone, the group and the
    resource are gone from discovery and their paths answer 404."""
    fake_apiserver.register_crd(json.loads(json.dumps(WIDGET_CRD)))
    custom: Any = client.CustomObjectsApi(kube_client)
    held = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "held", "finalizers": ["x/y"]},
            "spec": {"size": "small"}}  # fmt: skip
    custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", held)
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    extensions.delete_custom_resource_definition(WIDGET_CRD["metadata"]["name"])
    fake_apiserver.settle()

    listed = get(kube_client, f"/apis/{GROUP}/v1")["resources"]
    assert listed[0]["verbs"] == ["delete", "deletecollection", "get", "list", "watch"]
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", {**held, "metadata": {"name": "new"}})
    assert refused.value.status == 405
    assert message_of(refused.value) == "create not allowed while custom resource definition is terminating"
    assert [
        i["metadata"]["name"] for i in custom.list_namespaced_custom_object(GROUP, "v1", "default", "widgets")["items"]
    ] == ["held"]

    custom.patch_namespaced_custom_object(GROUP, "v1", "default", "widgets", "held", {"metadata": {"finalizers": None}})
    fake_apiserver.settle()
    assert GROUP not in {g["name"] for g in get(kube_client, "/apis")["groups"]}
    for path in (f"/apis/{GROUP}", f"/apis/{GROUP}/v1", f"/apis/{GROUP}/v1/namespaces/default/widgets"):
        response = kube_client.call_api(*kube_client.param_serialize("GET", path))
        response.read()
        assert response.status == 404, path


def test_a_new_crd_is_stored_as_the_real_server_stores_it(kube_client: Any) -> None:
    """kube-apiserver v1.36.2: defaults owned by the creator, structs without `.` in managedFields, no conditions
    yet (null) and the storage version recorded; a schema all versions share is checked as `spec.validation`."""
    import copy as copying

    from tests.apiserver.widgets import WIDGET_CRD

    extensions = client.ApiextensionsV1Api(kube_client)
    # A dry run shows the object as stored, before the CRD controllers report it Established (which the fake
    # does at once on a real create).
    created = extensions.create_custom_resource_definition(WIDGET_CRD, dry_run="All", _preload_content=False)
    body = json.loads(created.data)
    assert body["status"]["conditions"] is None
    assert body["status"]["storedVersions"] == ["v1"]
    fields = body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
    assert "." not in fields
    assert fields["f:conversion"] == {".": {}, "f:strategy": {}}
    assert fields["f:names"] == {"f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:shortNames": {}, "f:singular": {}}
    bad = copying.deepcopy(WIDGET_CRD)
    bad["metadata"]["name"] = "others.example.fakeapi.io"
    bad["spec"]["names"] = {"plural": "others", "kind": "Other"}
    for version in bad["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["type"] = ""
    with pytest.raises(ApiException) as caught:
        extensions.create_custom_resource_definition(bad)
    assert message_of(caught.value) == (
        'CustomResourceDefinition.apiextensions.k8s.io "others.example.fakeapi.io" is invalid: '
        "spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value: "
        "must not be empty for specified object fields"
    )
