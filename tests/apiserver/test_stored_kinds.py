"""The built-in kinds the fake only stores (what `helm install` of the chart writes): served where
kube-apiserver serves them, `generation` counting spec changes, status kept out of the main endpoint."""

from __future__ import annotations

from typing import Any

from kubernetes import client

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d", "namespace": "default"},
    "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "example/image:1"}]},
        },
    },
    "status": {"replicas": 3},
}


def test_a_deployment_counts_spec_changes_and_ignores_status_on_the_main_endpoint(kube_client: Any) -> None:
    apps: Any = client.AppsV1Api(kube_client)
    created = apps.create_namespaced_deployment("default", DEPLOYMENT)
    assert created.metadata.generation == 1
    assert created.status is None
    created.metadata.labels = {"team": "a"}
    assert apps.replace_namespaced_deployment("d", "default", created).metadata.generation == 1
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "example/image:2"}]}}}}
    changed = apps.patch_namespaced_deployment("d", "default", patch)
    assert changed.metadata.generation == 2
    assert changed.metadata.uid == created.metadata.uid
    assert changed.spec.template.spec.containers[0].image == "example/image:2"


def test_rbac_service_accounts_services_and_budgets_are_served(kube_client: Any) -> None:
    rbac: Any = client.RbacAuthorizationV1Api(kube_client)
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}  # fmt: skip
    assert rbac.create_cluster_role(role).rules[0].verbs == ["get"]
    core: Any = client.CoreV1Api(kube_client)
    core.create_namespaced_service_account("default", {"metadata": {"name": "sa"}})
    service = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 443, "targetPort": 8443}]}}
    assert core.create_namespaced_service("default", service).spec.ports[0].port == 443
    policy: Any = client.PolicyV1Api(kube_client)
    budget = {"metadata": {"name": "b"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "d"}}}}
    assert policy.create_namespaced_pod_disruption_budget("default", budget).metadata.generation == 1
