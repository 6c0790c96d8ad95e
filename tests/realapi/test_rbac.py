"""The reconciler under the chart's own RBAC on a real kube-apiserver v1.36: it runs as the chart's ServiceAccount
(a client certificate naming that user and its groups), with the rendered ClusterRoles, Roles and bindings
applied as Helm would, elects itself through the Lease the Role restricts by name, converges a ModelBooster to
Active, and the API server refuses none of its requests (the fake does not authorize: tests/e2e/test_rbac.py
compares its request log with the rules instead)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Final

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.chart.render import NAMESPACE
from tests.e2e.harness import RECONCILER_SA, raw_request
from tests.e2e.user import create_booster, load_example, mark_serving, renamed, wait_condition
from tests.realapi.controlplane import Credentials, RealCluster
from tests.realapi.reconciler import RunningReconciler, running_reconciler
from tests.realapi.session import RealSession
from tests.realapi.webhook import rendered_chart

RBAC_KINDS: Final = {
    "ServiceAccount": "/api/v1/{namespaced}serviceaccounts",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Role": "/apis/rbac.authorization.k8s.io/v1/{namespaced}roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/{namespaced}rolebindings",
}
SERVICE_ACCOUNT: Final = f"system:serviceaccount:{NAMESPACE}:{RECONCILER_SA}"
TIMEOUT: Final = 30.0


def _path(obj: dict[str, Any]) -> str:
    namespace = obj["metadata"].get("namespace")
    base = RBAC_KINDS[obj["kind"]].format(namespaced=f"namespaces/{namespace}/" if namespace else "")
    return f"{base}/{obj['metadata']['name']}?fieldManager=helm&force=true"


@pytest.fixture(scope="module")
def chart_identity(real_api: RealCluster, real_crds: list[dict[str, Any]]) -> Credentials:
    """The chart's RBAC objects applied, and a client identity that is the reconciler's ServiceAccount."""
    from kubernetes.client import ApiException

    with real_api.api_client() as api:
        with contextlib.suppress(ApiException):  # already there (another module made it)
            raw_request(api, "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                                   "metadata": {"name": NAMESPACE}})  # fmt: skip
        for obj in rendered_chart().objects:
            if obj["kind"] in RBAC_KINDS:
                raw_request(api, "PATCH", _path(obj), body=obj, content_type="application/apply-patch+yaml")
    return real_api.credentials(
        "chart-reconciler",
        user=SERVICE_ACCOUNT,
        groups=["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"],
    )


def _codes(reconciler: RunningReconciler) -> dict[str, float]:
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(reconciler.scrape()):
        if family.name == "rest_client_requests":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    counts[sample.labels["code"]] = counts.get(sample.labels["code"], 0.0) + sample.value
    return counts


def test_the_reconciler_needs_nothing_the_chart_does_not_grant(
    real_api: RealCluster, chart_identity: Credentials, real_namespace: str, real_user: RealSession, tmp_path: Path
) -> None:
    create_booster(real_user, renamed(load_example("single-vllm-cpu.yaml"), "governed", real_namespace))
    with running_reconciler(
        real_api,
        namespace=real_namespace,
        controller_namespace=NAMESPACE,
        kubeconfig=chart_identity.kubeconfig,
        leader_elect=True,
        workdir=tmp_path,
    ) as reconciler:
        real_user.processes.append(reconciler.process)
        wait_condition(real_user, real_namespace, "governed", "Initialized", "True", timeout=TIMEOUT)
        mark_serving(real_user, real_namespace, "governed-cpu", available=True, replicas=1)
        wait_condition(real_user, real_namespace, "governed", "Active", "True", timeout=TIMEOUT)
        lease = raw_request(
            real_user.user,
            "GET",
            f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{rendered_lease_name()}",
        )
        assert lease["spec"]["holderIdentity"].startswith(f"{reconciler.pod_name}_")
        codes = _codes(reconciler)
    assert codes.get("403", 0) == 0, f"requests forbidden under the chart's RBAC: {codes}"
    assert codes.get("200", 0) > 0


def rendered_lease_name() -> str:
    from tests.e2e.kubelet import container

    args: list[str] = container(rendered_chart().deployment("reconciler"), "reconciler")["args"]
    return next(arg.split("=", 1)[1] for arg in args if arg.startswith("--lease-name="))
