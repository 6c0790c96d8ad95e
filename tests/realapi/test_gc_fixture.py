"""`real_api_gc`: kube-controller-manager runs beside the API server, so owned objects are garbage-collected."""

from __future__ import annotations

import time
from typing import Any

from tests.realapi.controlplane import RealCluster


def test_owned_configmap_is_collected_with_its_owner(real_api_gc: RealCluster, real_namespace: str) -> None:
    from kubernetes import client

    with real_api_gc.api_client() as api:
        core = client.CoreV1Api(api)
        owner = core.create_namespaced_config_map(
            real_namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
        )
        assert owner.metadata is not None
        reference = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
        core.create_namespaced_config_map(
            real_namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="child", owner_references=[reference]))
        )
        core.delete_namespaced_config_map("owner", real_namespace)
        assert _gone(core, "child", real_namespace), "the garbage collector did not delete the dependent"


def _gone(core: Any, name: str, namespace: str, *, timeout: float = 30.0) -> bool:
    from kubernetes import client

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_config_map(name, namespace)
        except client.ApiException as error:
            if error.status == 404:
                return True
            raise
        time.sleep(0.1)
    return False
