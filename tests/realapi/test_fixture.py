"""The fixture itself: a real kube-apiserver v1.36 answers as the admin, and each identity is who it says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.harness import raw_request
from tests.realapi.controlplane import ADMIN_USER, RealCluster


def test_server_is_ready_and_is_v1_36(real_api: RealCluster, real_client: Any) -> None:
    from kubernetes import client

    assert real_api.get_raw("/readyz") == (200, "ok")
    version = client.VersionApi(real_client).get_code()
    assert (version.major, version.minor) == ("1", "36")


def test_admin_is_system_masters(real_client: Any) -> None:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    user = raw_request(real_client, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=review)
    assert user["status"]["userInfo"]["username"] == ADMIN_USER
    assert "system:masters" in user["status"]["userInfo"]["groups"]


def test_kubeconfig_file_loads_and_reaches_the_server(real_api: RealCluster) -> None:
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(real_api.kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    assert configuration.host == real_api.host
    with client.ApiClient(configuration) as api:
        names = {ns["metadata"]["name"] for ns in raw_request(api, "GET", "/api/v1/namespaces")["items"]}
    assert {"default", "kube-system"} <= names


def test_other_identities_are_subject_to_rbac(real_api: RealCluster) -> None:
    from kubernetes import client, config

    identity = real_api.credentials("nobody", user="nobody")
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(identity.kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    with client.ApiClient(configuration) as api, pytest.raises(client.ApiException) as refused:
        client.CoreV1Api(api).list_namespace()
    assert refused.value.status == 403
    assert json.loads(refused.value.body or "{}")["reason"] == "Forbidden"


def test_real_namespace_is_fresh_and_unique(real_namespace: str, real_client: Any) -> None:
    assert raw_request(real_client, "GET", f"/api/v1/namespaces/{real_namespace}")["status"]["phase"] == "Active"
    # No controller-manager: no root CA ConfigMap either.
    assert raw_request(real_client, "GET", f"/api/v1/namespaces/{real_namespace}/configmaps")["items"] == []
    assert real_namespace.startswith("rt-")
