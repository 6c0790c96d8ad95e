"""Our generated CRDs (shared.crds) served by the fake, with the examples a user would apply, and with objects a
cluster kept from Kthena v0.1.0, whose CRD accepted the features ours refuses."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException

from shared import crds
from tests.apiserver.helpers import message_of, status_of
from tests.fakeapi.server import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]
GROUP = "workload.serving.volcano.sh"
MB = 'ModelBooster.workload.serving.volcano.sh "{name}" is invalid: {errors}'
TOPOLOGY = "topology configuration of ModelServing is not supported; create the ModelServing yourself"
JSON_PATCH = "application/json-patch+json"
RATE_LIMIT = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
BEHAVIOR = "behavior is not supported; create AutoscalingPolicy + Binding yourself"
PANIC_POLICY = "panicPolicy is not supported; create AutoscalingPolicy + Binding yourself"


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
    # Stored in the shape it was written in: one `backend` (Kthena v1.0) or a list of `backends`.
    shapes = [key for key in ("backend", "backends") if key in created["spec"]]
    assert shapes == [key for key in ("backend", "backends") if key in body["spec"]]
    assert len(shapes) == 1


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
        # The rule sits on the backend (workers is an atomic list, where oldSelf is refused): no worker index.
        ("worker-network-topology.yaml", f"spec.backends[0].workers: Forbidden: {TOPOLOGY}"),
        # The backend-shape rules are the CRD's own too (docs/design/api.md §8).
        (
            "both-backend-shapes.yaml",
            "spec.backends: Forbidden: may not be set together with spec.backend: keep spec.backend for one backend, "
            "or spec.backends for a list of backends, and remove the other",
        ),
        (
            "single-backend-autoscaling.yaml",
            "spec.autoscalingPolicy: Forbidden: a spec.backend with replicas (Kthena v1.0) has no autoscaling: it "
            "runs spec.backend.replicas replicas; to autoscale it, replace replicas with minReplicas and maxReplicas "
            "(as Kthena v0.2-v0.4 write it)",
        ),
        (
            "backend-replicas-and-range.yaml",
            "spec.backend.replicas: Forbidden: may not be set together with minReplicas or maxReplicas: replicas is "
            "Kthena v1.0's fixed count, minReplicas and maxReplicas are Kthena v0.2-v0.4's range; keep one",
        ),
    ],
)
def test_unsupported_features_are_refused_by_the_crds_own_rules(served: Any, example: str, errors: str) -> None:
    body = load(ROOT / "examples" / "invalid" / example)
    with pytest.raises(ApiException) as caught:
        served.create_namespaced_custom_object(GROUP, "v1alpha1", "default", "modelboosters", body)
    assert caught.value.status == 422
    assert message_of(caught.value) == MB.format(name=body["metadata"]["name"], errors=errors)


def test_neither_shape_is_refused_by_the_crd(served: Any) -> None:
    body = load(ROOT / "examples" / "single-backend-kthena-v1.yaml")
    del body["spec"]["backend"]
    with pytest.raises(ApiException) as caught:
        served.create_namespaced_custom_object(GROUP, "v1alpha1", "default", "modelboosters", body)
    assert "spec: Required value: must specify one of spec.backend" in message_of(caught.value)


def without_rules(node: Any) -> Any:
    """A schema as Kthena v0.1.0's CRD had it: the same fields, none of our CEL rules."""
    if isinstance(node, dict):
        return {k: without_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [without_rules(v) for v in node]
    return node


def modelbooster_crd() -> dict[str, Any]:
    (definition,) = [d for d in crds.crds() if d["spec"]["names"]["kind"] == "ModelBooster"]
    return copy.deepcopy(definition)


def every_unsupported_feature() -> dict[str, Any]:
    body = load(ROOT / "examples" / "single-vllm-cpu.yaml")
    body["metadata"] = {"name": "legacy", "namespace": "default"}
    behavior = {"scaleUp": {"panicPolicy": {"period": "10s"}}}
    policy = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}], "behavior": behavior}
    spec = body["spec"]
    spec.update(rateLimit={"tokensPerUnit": 10}, autoscalingPolicy=copy.deepcopy(policy))
    backend = spec["backends"][0]
    backend.update(
        rateLimit={"tokensPerUnit": 10},
        networkTopology={"mode": "hard"},
        topology={"rack": "r1"},
        autoscalingPolicy=copy.deepcopy(policy),
    )
    backend["workers"][0]["networkTopology"] = {"mode": "soft"}
    return body


def stored_under_kthenas_crd(kube_client: Any, body: dict[str, Any]) -> Any:
    """Store `body` under a rule-less CRD (as Kthena's accepted it), then replace that CRD with ours."""
    extensions: Any = client.ApiextensionsV1Api(kube_client)
    definition = modelbooster_crd()
    kthena = copy.deepcopy(definition)
    kthena["spec"] = without_rules(kthena["spec"])
    created = extensions.create_custom_resource_definition(kthena)
    api: Any = client.CustomObjectsApi(kube_client)
    api.create_namespaced_custom_object(GROUP, "v1alpha1", "default", "modelboosters", body)
    definition["metadata"]["resourceVersion"] = created.metadata.resource_version
    extensions.replace_custom_resource_definition(definition["metadata"]["name"], definition)
    return api


@pytest.fixture
def kept_from_kthena(kube_client: Any) -> Any:
    """A ModelBooster holding every unsupported feature, stored under a rule-less CRD that ours then replaced."""
    return stored_under_kthenas_crd(kube_client, every_unsupported_feature())


def test_a_modelbooster_kept_from_kthena_can_be_relabelled_given_a_status_and_deleted(
    kept_from_kthena: Any, fake_apiserver: FakeApiServer
) -> None:
    api = kept_from_kthena
    relabelled = api.patch_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "modelboosters", "legacy", {"metadata": {"labels": {"team": "a"}}}
    )
    assert relabelled["metadata"]["labels"] == {"team": "a"}
    condition = {"type": "Failed", "status": "True", "reason": "Unsupported", "message": "x"}
    failed = {"conditions": [{**condition, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    written = api.patch_namespaced_custom_object_status(
        GROUP, "v1alpha1", "default", "modelboosters", "legacy", {"status": failed}
    )
    assert written["status"]["conditions"][0]["type"] == "Failed"
    api.delete_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "modelboosters", "legacy", propagation_policy="Foreground"
    )
    fake_apiserver.settle()
    assert fake_apiserver.get(f"{GROUP}/v1alpha1", "modelboosters", "legacy", "default") is None


def kthena_v04_with_behavior() -> dict[str, Any]:
    """A ModelBooster as Kthena v0.4.0 stored it: one `spec.backend` with a range, a model-level policy with a
    `behavior` (which we do not support)."""
    body = load(ROOT / "examples" / "single-backend-autoscaling-kthena-v04.yaml")
    body["metadata"] = {"name": "legacy-v04", "namespace": "default"}
    body["spec"]["autoscalingPolicy"]["behavior"] = {"scaleDown": {"stabilizationWindow": "5m"}}
    return body


@pytest.fixture
def kept_from_kthena_v04(kube_client: Any) -> Any:
    """A Kthena v0.2-v0.4 ModelBooster stored under a rule-less CRD that ours then replaced."""
    return stored_under_kthenas_crd(kube_client, kthena_v04_with_behavior())


def test_a_kthena_v04_modelbooster_stays_manageable_under_our_crd(
    kept_from_kthena_v04: Any, fake_apiserver: FakeApiServer
) -> None:
    """Its shape is ours to serve, and its unsupported `behavior` is carried over by the presence rule."""
    api = kept_from_kthena_v04
    relabelled = api.patch_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "modelboosters", "legacy-v04", {"metadata": {"labels": {"team": "a"}}}
    )
    assert relabelled["metadata"]["labels"] == {"team": "a"}
    assert (relabelled["spec"]["backend"]["minReplicas"], relabelled["spec"]["backend"]["maxReplicas"]) == (1, 4)
    condition = {"type": "Failed", "status": "True", "reason": "InvalidSpec", "message": "x"}
    status = {"conditions": [{**condition, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    api.patch_namespaced_custom_object_status(
        GROUP, "v1alpha1", "default", "modelboosters", "legacy-v04", {"status": status}
    )
    widened = api.patch_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "modelboosters", "legacy-v04", {"spec": {"backend": {"maxReplicas": 6}}}
    )
    assert widened["metadata"]["generation"] == 2
    api.delete_namespaced_custom_object(GROUP, "v1alpha1", "default", "modelboosters", "legacy-v04")
    fake_apiserver.settle()
    assert fake_apiserver.get(f"{GROUP}/v1alpha1", "modelboosters", "legacy-v04", "default") is None


def test_kept_features_may_be_edited_or_dropped_but_a_new_backend_may_not_bring_them(kept_from_kthena: Any) -> None:
    api = kept_from_kthena

    def patch(operations: list[dict[str, Any]]) -> Any:
        return api.patch_namespaced_custom_object(
            GROUP, "v1alpha1", "default", "modelboosters", "legacy", operations, _content_type=JSON_PATCH
        )

    # The CRD checks presence only; that a kept value is also unchanged is the webhook's check.
    path = "/spec/backends/0/autoscalingPolicy/behavior/scaleUp/panicPolicy"
    assert patch([{"op": "replace", "path": path, "value": {"period": "20s"}}])["metadata"]["generation"] == 2
    assert "rateLimit" not in patch([{"op": "remove", "path": "/spec/rateLimit"}])["spec"]
    backend = dict(every_unsupported_feature()["spec"]["backends"][0], name="gpu")
    with pytest.raises(ApiException) as caught:
        patch([{"op": "add", "path": "/spec/backends/-", "value": backend}])
    lines = [
        f"spec.backends[1].autoscalingPolicy.behavior.scaleUp.panicPolicy: Forbidden: {PANIC_POLICY}",
        f"spec.backends[1].autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}",
        f"spec.backends[1].networkTopology: Forbidden: {TOPOLOGY}",
        f"spec.backends[1].rateLimit: Forbidden: {RATE_LIMIT}",
        f"spec.backends[1].topology: Forbidden: {TOPOLOGY}",
        f"spec.backends[1].workers: Forbidden: {TOPOLOGY}",
    ]
    causes = [f"{cause['field']}: {cause['message']}" for cause in status_of(caught.value)["details"]["causes"]]
    assert sorted(causes) == lines


POLICY = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}


@pytest.mark.parametrize(
    ("path", "value", "errors"),
    [
        ("/spec/rateLimit", {}, f"spec.rateLimit: Forbidden: {RATE_LIMIT}"),
        ("/spec/backends/0/rateLimit", {}, f"spec.backends[0].rateLimit: Forbidden: {RATE_LIMIT}"),
        ("/spec/backends/0/networkTopology", {}, f"spec.backends[0].networkTopology: Forbidden: {TOPOLOGY}"),
        ("/spec/backends/0/topology", {}, f"spec.backends[0].topology: Forbidden: {TOPOLOGY}"),
        ("/spec/backends/0/workers/0/networkTopology", {}, f"spec.backends[0].workers: Forbidden: {TOPOLOGY}"),
        (
            "/spec/backends/0/autoscalingPolicy",
            {**POLICY, "behavior": {"scaleDown": {}}},
            f"spec.backends[0].autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}",
        ),
        (
            "/spec/autoscalingPolicy",
            {**POLICY, "behavior": {"scaleUp": {"panicPolicy": {}}}},
            f"[spec.autoscalingPolicy.behavior.scaleUp.panicPolicy: Forbidden: {PANIC_POLICY}, "
            f"spec.autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}]",
        ),
    ],
)
def test_an_update_that_adds_an_unsupported_feature_is_refused(served: Any, path: str, value: Any, errors: str) -> None:
    served.create_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "modelboosters", load(ROOT / "examples" / "single-vllm-cpu.yaml")
    )
    with pytest.raises(ApiException) as caught:
        served.patch_namespaced_custom_object(
            GROUP,
            "v1alpha1",
            "default",
            "modelboosters",
            "qwen-small",
            [{"op": "add", "path": path, "value": value}],
            _content_type=JSON_PATCH,
        )
    assert caught.value.status == 422
    assert message_of(caught.value) == MB.format(name="qwen-small", errors=errors)
