"""CRDs are stored as kube-apiserver stores them: without the empty pieces Go's `omitempty` drops, and with
`.spec.versions` an atomic list, so re-applying a CRD whose file holds such a piece conflicts with its other
field manager (Helm's) until forced — while our generated CRDs round-trip unchanged and re-apply cleanly.

The expected stored form below was read back from a real kube-apiserver v1.36.2 after creating `PROBE`."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from shared import crds
from tests.apiserver.helpers import message_of

APPLY = "application/apply-patch+yaml"

PROBE: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "probes.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Probe", "plural": "probes"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {
                        "name": "Age",
                        "type": "date",
                        "jsonPath": ".metadata.creationTimestamp",
                        "description": "",
                        "priority": 0,
                        "format": "",
                    }
                ],
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "",
                        "required": [],
                        "properties": {
                            "spec": {
                                "type": "object",
                                "nullable": False,
                                "x-kubernetes-embedded-resource": False,
                                "x-kubernetes-int-or-string": False,
                                "x-kubernetes-validations": [],
                                "properties": {
                                    "a": {"type": "integer", "minimum": 1, "maximum": 10, "exclusiveMinimum": False},
                                    "b": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                        "uniqueItems": False,
                                        "x-kubernetes-list-type": "atomic",
                                    },
                                    "c": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "d": {"type": "string", "default": "", "pattern": "", "format": ""},
                                    "e": {"type": "object", "additionalProperties": True},
                                },
                            },
                            "status": {"type": "object", "properties": {}},
                        },
                    }
                },
            }
        ],
    },
}
STORED_VERSION: dict[str, Any] = {
    "additionalPrinterColumns": [{"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}],
    "name": "v1",
    "schema": {
        "openAPIV3Schema": {
            "properties": {
                "spec": {
                    "properties": {
                        "a": {"maximum": 10, "minimum": 1, "type": "integer"},
                        "b": {"items": {"type": "string"}, "type": "array", "x-kubernetes-list-type": "atomic"},
                        "c": {"additionalProperties": {"type": "string"}, "type": "object"},
                        "d": {"default": "", "type": "string"},
                        "e": {"additionalProperties": True, "type": "object"},
                    },
                    "type": "object",
                },
                "status": {"type": "object"},
            },
            "type": "object",
        }
    },
    "served": True,
    "storage": True,
    "subresources": {"status": {}},
}


@pytest.fixture
def extensions(kube_client: Any) -> Any:
    return client.ApiextensionsV1Api(kube_client)


def _raw(extensions: Any, name: str) -> dict[str, Any]:
    found: dict[str, Any] = extensions.api_client.sanitize_for_serialization(
        extensions.read_custom_resource_definition(name)
    )
    return found


def _apply(extensions: Any, body: dict[str, Any], manager: str, *, force: bool | None = None) -> Any:
    return extensions.patch_custom_resource_definition(
        body["metadata"]["name"], body, field_manager=manager, force=force, _content_type=APPLY
    )


def test_empty_schema_pieces_are_not_stored(extensions: Any) -> None:
    extensions.create_custom_resource_definition(copy.deepcopy(PROBE))
    assert _raw(extensions, "probes.example.com")["spec"]["versions"] == [STORED_VERSION]


def test_reapplying_a_file_the_server_rewrites_conflicts_with_helm_until_forced(extensions: Any) -> None:
    extensions.create_custom_resource_definition(copy.deepcopy(PROBE), field_manager="helm")
    with pytest.raises(ApiException) as caught:
        _apply(extensions, copy.deepcopy(PROBE), "kubectl")
    assert caught.value.status == 409
    assert message_of(caught.value).startswith('Apply failed with 1 conflict: conflict with "helm"')
    assert message_of(caught.value).endswith(": .spec.versions")
    _apply(extensions, copy.deepcopy(PROBE), "kubectl", force=True)


@pytest.mark.parametrize("definition", crds.crds(), ids=lambda d: d["metadata"]["name"])
def test_generated_crds_round_trip_and_reapply_without_conflict(extensions: Any, definition: dict[str, Any]) -> None:
    extensions.create_custom_resource_definition(copy.deepcopy(definition), field_manager="helm")
    stored = _raw(extensions, definition["metadata"]["name"])
    assert stored["spec"]["versions"] == definition["spec"]["versions"]
    assert stored["metadata"]["annotations"] == definition["metadata"]["annotations"]
    # What `kubectl apply --server-side` of the unchanged file does after `helm install`: no conflict.
    _apply(extensions, copy.deepcopy(definition), "kubectl")
