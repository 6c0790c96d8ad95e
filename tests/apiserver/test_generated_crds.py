"""Our generated CRDs (shared.crds) served by the fake, with the examples a user would apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException

from shared import crds
from tests.apiserver.helpers import message_of
from tests.fakeapi.server import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]
GROUP = "workload.serving.volcano.sh"
MB = 'ModelBooster.workload.serving.volcano.sh "{name}" is invalid: {errors}'
TOPOLOGY = "topology configuration of ModelServing is not supported; create the ModelServing yourself"


@pytest.fixture
def served(kube_client: Any) -> Any:
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    for definition in crds.crds():
        extensions.create_custom_resource_definition(definition)
    return client.CustomObjectsApi(kube_client)


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    return document


def test_every_generated_crd_is_accepted_and_served(kube_client: Any, served: Any) -> None:
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    names = sorted(c.metadata.name for c in extensions.list_custom_resource_definition().items)
    assert names == sorted(d["metadata"]["name"] for d in crds.crds())
    for definition in crds.crds():
        spec = definition["spec"]
        version = spec["versions"][0]["name"]
        listed = served.list_cluster_custom_object(spec["group"], version, spec["names"]["plural"])
        assert listed["items"] == []


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_the_valid_examples_are_accepted(served: Any, fake_apiserver: FakeApiServer, path: Path) -> None:
    body = load(path)
    namespace = body["metadata"].get("namespace", "default")
    if fake_apiserver.get("v1", "namespaces", namespace) is None:
        fake_apiserver.create_namespace(namespace)
    created = served.create_namespaced_custom_object(GROUP, "v1alpha1", namespace, "modelboosters", body)
    assert created["metadata"]["generation"] == 1
    assert created["spec"]["backends"]


@pytest.mark.parametrize(
    ("example", "errors"),
    [
        (
            "rate-limit.yaml",
            "spec.rateLimit: Forbidden: rate limiting of the generated ModelRoute is not supported; "
            "manage a ModelRoute yourself",
        ),
        ("topology.yaml", f"spec.backends[0].topology: Forbidden: {TOPOLOGY}"),
        ("network-topology.yaml", f"spec.backends[0].networkTopology: Forbidden: {TOPOLOGY}"),
        ("worker-network-topology.yaml", f"spec.backends[0].workers[0].networkTopology: Forbidden: {TOPOLOGY}"),
    ],
)
def test_unsupported_features_are_refused_by_the_crds_own_rules(served: Any, example: str, errors: str) -> None:
    body = load(ROOT / "examples" / "invalid" / example)
    with pytest.raises(ApiException) as caught:
        served.create_namespaced_custom_object(GROUP, "v1alpha1", "default", "modelboosters", body)
    assert caught.value.status == 422
    assert message_of(caught.value) == MB.format(name=body["metadata"]["name"], errors=errors)
