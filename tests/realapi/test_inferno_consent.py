"""The confused deputy on a real kube-apiserver v1.36 with RBAC (docs/design/inferno.md §18): mallory may write
Inferno objects in a namespace and read its Deployments, not change them. The API server refuses her the
Deployment's `/scale` and the consent annotation; her Server naming the Deployment, with bounds 0..50,000 and a
load of her own, moves nothing, although the reconciler — running as the chart's ServiceAccount under the chart's
RBAC — may scale it. The Deployment's owner consents and an HPA scales it too: still nothing, naming the HPA.
The HPA goes: the Deployment is scaled to the operator's ceiling (chart defaults), one step per decision. The
reconciler is refused nothing (every request it made the chart grants)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from reconciler.inferno.ceilings import Ceilings
from shared.scaling_consent import ANNOTATION_SCALED_BY
from tests.chart.render import NAMESPACE
from tests.e2e.harness import raw_request
from tests.realapi.controlplane import Credentials, RealCluster
from tests.realapi.reconciler import running_reconciler
from tests.realapi.test_rbac import _codes, chart_identity  # noqa: F401 - the fixture: the chart's RBAC applied

INFERNO: Final = "/apis/inferno.platform.ai/v1alpha1"
CEILINGS: Final = Ceilings()  # what the chart's defaults pass
TIMEOUT: Final = 40.0


def _deployments(namespace: str, suffix: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments{suffix}"


def _inferno(kind: str, plural: str, name: str, namespace: str, spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    obj = {"apiVersion": "inferno.platform.ai/v1alpha1", "kind": kind, "metadata": {"name": name},
           "spec": spec}  # fmt: skip
    return f"{INFERNO}/namespaces/{namespace}/{plural}", obj


def _mallory_objects(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    perf = {"acc": "G2", "accCount": 1, "alpha": 17.15, "beta": 0.34, "maxBatchSize": 38, "atTokens": 512}
    server = {
        "name": "grab", "class": "Premium", "model": "llama",
        "currentAlloc": {"accelerator": "G2", "numReplicas": 3, "load": {"arrivalRate": 60000, "avgLength": 1024}},
        "targetRef": {"kind": "Deployment", "name": "search"}, "actuation": "Scale",
        "minReplicas": 0, "maxReplicas": 50000, "scaleDownStabilization": "0s",
    }  # fmt: skip
    flags = {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    return [
        _inferno("Accelerator", "accelerators", "g2", namespace, {"name": "G2", "type": "G2", "cost": 23}),
        _inferno("Model", "models", "llama", namespace, {"name": "llama", "data": [perf]}),
        _inferno("ServiceClass", "serviceclasses", "premium", namespace, {
            "name": "Premium", "priority": 1, "data": [{"model": "llama", "slo-itl": 40, "slo-ttw": 500}]}),
        _inferno("Server", "servers", "grab", namespace, server),
        _inferno("Optimizer", "optimizers", "inferno", namespace,
                 {"optimize": False, "interval": "500ms", "data": {"optimizer": flags}}),
    ]  # fmt: skip


@contextlib.contextmanager
def _client_of(cluster: RealCluster, credentials: Credentials) -> Iterator[Any]:
    from kubernetes import client

    configuration = cluster.configuration()
    configuration.cert_file = str(credentials.cert_file)
    configuration.key_file = str(credentials.key_file)
    api = client.ApiClient(configuration)
    try:
        yield api
    finally:
        api.close()  # type: ignore[no-untyped-call]


def _refused(call: Callable[[], Any]) -> int:
    from kubernetes.client import ApiException

    with pytest.raises(ApiException) as caught:
        call()
    return int(caught.value.status)


def _wait(what: Callable[[], bool], message: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not what():
        assert time.monotonic() < deadline, message
        time.sleep(0.2)


def test_a_server_author_without_scale_rights_cannot_scale_through_the_reconciler(
    real_api: RealCluster, chart_identity: Credentials, real_namespace: str, tmp_path: Path  # noqa: F811
) -> None:
    namespace = real_namespace
    with real_api.api_client() as admin:
        template = {"metadata": {"labels": {"app": "search"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        raw_request(admin, "POST", _deployments(namespace), body={
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "search"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "search"}}, "template": template}})  # fmt: skip
        # mallory: every Inferno object of the namespace, Deployments to read.
        rules = [{"apiGroups": ["inferno.platform.ai"], "resources": ["*"], "verbs": ["*"]},
                 {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]}]  # fmt: skip
        raw_request(admin, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
                    body={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                          "metadata": {"name": "inferno-author"}, "rules": rules})  # fmt: skip
        role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "inferno-author"}
        raw_request(admin, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
                    body={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                          "metadata": {"name": "inferno-author"}, "roleRef": role,
                          "subjects": [{"kind": "User", "name": "mallory"}]})  # fmt: skip
    mallory = real_api.credentials("mallory", user="mallory")

    with _client_of(real_api, mallory) as api:
        merge = "application/merge-patch+json"
        # The API server keeps her off the Deployment: no /scale, no consent annotation.
        assert _refused(lambda: raw_request(api, "PATCH", _deployments(namespace, "/search/scale"),
                                            body={"spec": {"replicas": 0}}, content_type=merge)) == 403  # fmt: skip
        consent = {"metadata": {"annotations": {ANNOTATION_SCALED_BY: "grab"}}}
        assert _refused(lambda: raw_request(api, "PATCH", _deployments(namespace, "/search"), body=consent,
                                            content_type=merge)) == 403  # fmt: skip
        for path, obj in _mallory_objects(namespace):
            raw_request(api, "POST", path, body=obj)

    def replicas() -> int:
        with real_api.api_client() as admin:
            return int(raw_request(admin, "GET", _deployments(namespace, "/search"))["spec"]["replicas"])

    def scaling() -> dict[str, Any]:
        with real_api.api_client() as admin:
            server = raw_request(admin, "GET", f"{INFERNO}/namespaces/{namespace}/servers/grab")
        conditions = (server.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "ScalingActive"), {})

    with running_reconciler(real_api, namespace=namespace, controller_namespace=NAMESPACE,
                            kubeconfig=chart_identity.kubeconfig, workdir=tmp_path) as reconciler:  # fmt: skip
        _wait(lambda: scaling().get("reason") == "ConsentMissing", "no ConsentMissing on mallory's Server")
        time.sleep(2.0)  # four more periods
        assert replicas() == 3
        assert f'annotate Deployment search {ANNOTATION_SCALED_BY}: "grab"' in scaling()["message"]

        # The owner consents, and an HPA scales the Deployment too: Inferno keeps off, naming the HPA.
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "search"}
        with real_api.api_client() as admin:
            raw_request(admin, "POST", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers",
                        body={"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                              "metadata": {"name": "search"},
                              "spec": {"scaleTargetRef": target, "minReplicas": 3, "maxReplicas": 10}})  # fmt: skip
            raw_request(admin, "PATCH", _deployments(namespace, "/search"), body=consent,
                        content_type="application/merge-patch+json")  # fmt: skip
        _wait(lambda: scaling().get("reason") == "AutoscalerConflict", "no AutoscalerConflict beside the HPA")
        assert "HorizontalPodAutoscaler search" in scaling()["message"]
        time.sleep(2.0)
        assert replicas() == 3

        # The HPA goes: up to the operator's ceiling, never past it.
        with real_api.api_client() as admin:
            raw_request(admin, "DELETE", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/search")
        seen = [replicas()]

        def at_ceiling() -> bool:
            seen.append(replicas())
            return seen[-1] == CEILINGS.max_replicas

        _wait(at_ceiling, f"not scaled to the ceiling {CEILINGS.max_replicas}: {seen}")
        assert max(seen) == CEILINGS.max_replicas
        assert "operator ceiling" in scaling()["message"]
        codes = _codes(reconciler)
    assert codes.get("403", 0) == 0, f"requests forbidden under the chart's RBAC: {codes}"
