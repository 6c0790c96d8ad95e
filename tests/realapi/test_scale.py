"""The closed loop's API facts on a real kube-apiserver v1.36: the ModelServing CRD we ship serves `/scale`
(the paths HPA, KEDA and Inferno's Scale actuation use, shaped as tests/fakeapi/scale.py emulates them), and
our webhook admits a backend range without autoscaling only with the external-replicas opt-in."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes.client import ApiException

from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS, NO_AUTOSCALING_DETAIL
from tests.e2e.harness import raw_request
from tests.e2e.user import custom
from tests.realapi.session import RealSession
from tests.realapi.webhook import Registration

WORKLOAD, VERSION = "workload.serving.volcano.sh", "v1alpha1"
ROLE = {"name": "leader", "replicas": 1, "workerReplicas": 0, "entryTemplate": {"spec": {"containers": []}}}
SERVING = {
    "apiVersion": f"{WORKLOAD}/{VERSION}",
    "kind": "ModelServing",
    "metadata": {"name": "m-a"},
    "spec": {"replicas": 2, "schedulerName": "volcano", "template": {"roles": [ROLE]}},
}


def _serving_path(namespace: str, suffix: str = "") -> str:
    return f"/apis/{WORKLOAD}/{VERSION}/namespaces/{namespace}/modelservings{suffix}"


@pytest.mark.usefixtures("real_crds")
def test_the_model_serving_crd_serves_scale(real_client: Any, real_namespace: str) -> None:
    raw_request(real_client, "POST", _serving_path(real_namespace), body=copy.deepcopy(SERVING))
    raw_request(
        real_client, "PATCH", _serving_path(real_namespace, "/m-a/status"),
        body={"status": {"replicas": 1, "labelSelector": "app=m-a"}}, content_type="application/merge-patch+json",
    )  # fmt: skip
    scale = raw_request(real_client, "GET", _serving_path(real_namespace, "/m-a/scale"))
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=m-a"}

    written = raw_request(
        real_client, "PATCH", _serving_path(real_namespace, "/m-a/scale"), body={"spec": {"replicas": 4}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert written["spec"] == {"replicas": 4}
    stored = raw_request(real_client, "GET", _serving_path(real_namespace, "/m-a"))
    assert stored["spec"]["replicas"] == 4

    listed = raw_request(real_client, "GET", f"/apis/{WORKLOAD}/{VERSION}")
    assert "modelservings/scale" in {resource["name"] for resource in listed["resources"]}


def _booster(namespace: str, *, opted_in: bool) -> dict[str, Any]:
    backend = {
        "name": "a", "type": "vLLM", "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "minReplicas": 1,
        "maxReplicas": 3, "workers": [{"type": "server", "image": "vllm/vllm-openai:v0.10.1", "replicas": 1,
                                       "pods": 1}],
    }  # fmt: skip
    metadata: dict[str, Any] = {"name": "opted-in" if opted_in else "fixed", "namespace": namespace}
    if opted_in:
        metadata["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true"}
    return {"apiVersion": f"{WORKLOAD}/{VERSION}", "kind": "ModelBooster", "metadata": metadata,
            "spec": {"backends": [backend]}}  # fmt: skip


def test_a_range_without_autoscaling_needs_the_opt_in(real_webhook: Registration, real_user: RealSession) -> None:
    namespace = real_webhook.namespace
    api = custom(real_user)
    opted_in, fixed = _booster(namespace, opted_in=True), _booster(namespace, opted_in=False)
    api.create_namespaced_custom_object(WORKLOAD, VERSION, namespace, "modelboosters", opted_in)
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_custom_object(WORKLOAD, VERSION, namespace, "modelboosters", fixed)
    status = json.loads(refused.value.body or "{}")
    assert refused.value.status == 422
    assert NO_AUTOSCALING_DETAIL in status["message"]
