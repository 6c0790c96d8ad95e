"""An accelerator requested without a limit, on a real kube-apiserver v1.36 with our webhook (issue 38): Kthena admits
such a worker and Kubernetes refuses its pods ("Limit must be set for non overcommitable resources"); our mutating
webhook sets the limit to the request, so the object is admitted and stored with it, and a pod of the ModelServing
rendered from the stored object is one the API server accepts (docs/design/api.md §6)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes.client import ApiException

from reconciler.modelbooster.synthesis import synthesize
from shared.validation import parse_modelbooster
from tests.e2e.harness import raw_exchange
from tests.e2e.user import load_example, renamed
from tests.realapi.session import RealSession
from tests.realapi.webhook import Registration

ASCEND = "huawei.com/ascend-1980"
PATH = "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/{namespace}/modelboosters"


def _engine(pod_spec: dict[str, Any]) -> dict[str, Any]:
    (engine,) = [container for container in pod_spec["containers"] if "resources" in container]
    found: dict[str, Any] = engine
    return found


def _pod_refusal(user: Any, namespace: str, pod_spec: dict[str, Any]) -> str | None:
    """The API server's refusal of a pod of this spec (a dry run: nothing is stored), or None when it is accepted."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": namespace}, "spec": pod_spec}
    try:
        raw_exchange(user, "POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All", body=pod)
    except ApiException as refused:
        return str(json.loads(refused.body or "{}").get("message"))
    return None


def test_a_worker_requesting_an_accelerator_without_a_limit_is_admitted_with_the_limit_and_its_pod_accepted(
    real_webhook: Registration, real_user: RealSession
) -> None:
    namespace = real_webhook.namespace
    # The pod admission needs the namespace's default service account, which only a running controller manager
    # (started by the session for the garbage-collection tests) makes by itself.
    try:
        raw_exchange(real_user.user, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                     body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})  # fmt: skip
    except ApiException as error:
        if error.status != 409:
            raise
    document = renamed(load_example("single-backend-kthena-v1.yaml"), "ascend", namespace)
    document["spec"]["backend"]["workers"][0]["resources"] = {"requests": {ASCEND: "1", "cpu": "1"}}

    created, headers = raw_exchange(real_user.user, "POST", PATH.format(namespace=namespace), body=document)

    resources = created["spec"]["backend"]["workers"][0]["resources"]
    assert resources == {"requests": {ASCEND: "1", "cpu": "1"}, "limits": {ASCEND: "1"}}
    warnings = [value for key, value in headers if key.lower() == "warning"]
    assert any(f"spec.backend.workers[0].resources.limits[{ASCEND}]: set to the request, 1" in w for w in warnings)

    serving = synthesize(parse_modelbooster(created))[0]
    pod_spec = serving["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]
    assert _engine(pod_spec)["resources"] == resources
    assert _pod_refusal(real_user.user, namespace, pod_spec) is None
    # What Kthena renders from the same worker, and Kubernetes refuses: the request without the limit.
    kthenas = copy.deepcopy(pod_spec)
    del _engine(kthenas)["resources"]["limits"]
    refusal = _pod_refusal(real_user.user, namespace, kthenas)
    assert refusal is not None
    assert "Limit must be set for non overcommitable resources" in refusal


@pytest.mark.parametrize("limit", ["2"])
def test_a_limit_that_differs_from_the_request_is_still_refused(
    real_webhook: Registration, real_user: RealSession, limit: str
) -> None:
    namespace = real_webhook.namespace
    document = renamed(load_example("single-backend-kthena-v1.yaml"), "ascend-two", namespace)
    document["spec"]["backend"]["workers"][0]["resources"] = {"requests": {ASCEND: "1"}, "limits": {ASCEND: limit}}
    with pytest.raises(ApiException) as refused:
        raw_exchange(real_user.user, "POST", PATH.format(namespace=namespace), body=document)
    assert refused.value.status == 422
    assert f"must be equal to {ASCEND} limit of {limit}" in json.loads(refused.value.body or "{}")["message"]
