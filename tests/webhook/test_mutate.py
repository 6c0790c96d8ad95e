"""The mutating webhook over HTTPS: the returned JSON Patch, applied with jsonpatch, gives the defaults."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch

from tests.webhook.conftest import Webhook
from tests.webhook.objects import deep, single_vllm, two_backends
from tests.webhook.reviews import as_stored, review
from webhook.app import MUTATE_PATH


def _ops(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops


async def _mutated(webhook: Webhook, obj: dict[str, Any], **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the object after applying the returned patch, the admission response)."""
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj, **kwargs))
    return jsonpatch.apply_patch(obj, _ops(response)), response


def _bare() -> dict[str, Any]:
    """single_vllm with every defaulted field left out."""
    obj = as_stored(single_vllm())
    worker = obj["spec"]["backends"][0]["workers"][0]
    for key in ("type", "replicas", "pods"):
        del worker[key]
    return obj


async def test_backend_and_worker_defaults(webhook: Webhook) -> None:
    obj = _bare()
    expected = deep(obj)
    expected["spec"]["backends"][0]["routeWeight"] = 100
    expected["spec"]["backends"][0]["workers"][0].update({"type": "server", "replicas": 1, "pods": 1})
    mutated, response = await _mutated(webhook, obj)
    assert mutated == expected
    assert "warnings" not in response


async def test_model_level_autoscaling_defaults(webhook: Webhook) -> None:
    obj = two_backends()
    del obj["spec"]["costExpansionRatePercent"]
    del obj["spec"]["autoscalingPolicy"]["tolerancePercent"]
    for backend in obj["spec"]["backends"]:
        del backend["scaleToZeroGracePeriod"]
        del backend["routeWeight"]
    mutated, _ = await _mutated(webhook, obj)
    assert mutated == two_backends()


async def test_backend_level_policy_gets_its_tolerance(webhook: Webhook) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["autoscalingPolicy"] = {
        "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": "10"}]
    }
    mutated, _ = await _mutated(webhook, obj)
    backend = mutated["spec"]["backends"][0]
    assert backend["autoscalingPolicy"]["tolerancePercent"] == 10
    # Backend-level autoscaling is not model-level: no grace period is added.
    assert "scaleToZeroGracePeriod" not in backend
    assert "costExpansionRatePercent" not in mutated["spec"]


async def test_zero_pods_is_corrected_with_a_warning_and_zero_replicas_kept(webhook: Webhook) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["workers"][0].update({"pods": 0, "replicas": 0})
    mutated, response = await _mutated(webhook, obj)
    worker = mutated["spec"]["backends"][0]["workers"][0]
    assert worker["pods"] == 1
    assert worker["replicas"] == 0
    assert len(response["warnings"]) == 1
    assert response["warnings"][0].startswith("spec.backends[0].workers[0].pods: ")


async def test_warnings_are_capped_and_the_rest_counted(webhook: Webhook) -> None:
    obj = single_vllm()
    worker = obj["spec"]["backends"][0]["workers"][0]
    obj["spec"]["backends"][0]["workers"] = [{**worker, "pods": 0} for _ in range(25)]
    mutated, response = await _mutated(webhook, obj)
    assert all(worker["pods"] == 1 for worker in mutated["spec"]["backends"][0]["workers"])  # the patch is whole
    warnings = response["warnings"]
    assert len(warnings) == 11
    assert warnings[9].startswith("spec.backends[0].workers[9].pods: ")
    assert warnings[10] == "and 15 more warnings like these, not shown"


async def test_a_defaulted_object_gets_an_empty_patch(webhook: Webhook) -> None:
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=two_backends()))
    assert response["patch"] == base64.b64encode(b"[]").decode()
    assert _ops(response) == []


async def test_unknown_fields_and_status_are_left_alone(webhook: Webhook) -> None:
    obj = _bare()
    obj["spec"]["futureField"] = {"keep": True}
    obj["status"] = {"observedGeneration": 3}
    ops = _ops(await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj)))
    assert all(op["op"] in ("add", "replace") for op in ops)
    assert all(not op["path"].startswith(("/status", "/metadata", "/spec/futureField")) for op in ops)


async def test_explicit_null_counts_as_absent(webhook: Webhook) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["routeWeight"] = None
    mutated, _ = await _mutated(webhook, obj)
    assert mutated["spec"]["backends"][0]["routeWeight"] == 100


async def test_update_is_defaulted_too(webhook: Webhook) -> None:
    old = as_stored(single_vllm())
    old["spec"]["backends"][0]["routeWeight"] = 100
    new = _bare()
    response = await webhook.admit(MUTATE_PATH, review(operation="UPDATE", obj=new, old=old))
    assert jsonpatch.apply_patch(new, _ops(response))["spec"] == old["spec"]


async def test_dry_run_is_answered_like_any_other_request(webhook: Webhook) -> None:
    obj = _bare()
    real = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj))
    dry = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj, dry_run=True))
    assert dry["patch"] == real["patch"]


async def test_the_patch_is_the_same_every_time(webhook: Webhook) -> None:
    obj = two_backends()
    for backend in obj["spec"]["backends"]:
        for key in ("routeWeight", "scaleToZeroGracePeriod"):
            del backend[key]
        for key in ("type", "pods", "replicas"):
            del backend["workers"][0][key]
    patches = {(await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj)))["patch"] for _ in range(5)}
    assert len(patches) == 1
    ops = json.loads(base64.b64decode(patches.pop()))
    # Defaulting's own order: backend 0 before backend 1, within a backend its fields before its workers'.
    assert [op["path"] for op in ops] == [
        "/spec/backends/0/routeWeight",
        "/spec/backends/0/scaleToZeroGracePeriod",
        "/spec/backends/0/workers/0/type",
        "/spec/backends/0/workers/0/replicas",
        "/spec/backends/0/workers/0/pods",
        "/spec/backends/1/routeWeight",
        "/spec/backends/1/scaleToZeroGracePeriod",
        "/spec/backends/1/workers/0/type",
        "/spec/backends/1/workers/0/replicas",
        "/spec/backends/1/workers/0/pods",
    ]


async def test_an_object_too_malformed_to_default_is_left_for_validation(webhook: Webhook) -> None:
    obj = {**single_vllm(), "spec": "not an object"}
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj))
    assert _ops(response) == []


async def test_an_accelerator_requested_without_a_limit_gets_the_request_as_its_limit(webhook: Webhook) -> None:
    # Kthena admits it; Kubernetes refuses the pod without a limit equal to the request (issue 38).
    obj = single_vllm()
    worker = obj["spec"]["backends"][0]["workers"][0]
    worker["resources"] = {"requests": {"huawei.com/ascend-1980": "1", "hugepages-2Mi": "1Gi", "cpu": "2"}}
    mutated, response = await _mutated(webhook, obj)
    assert mutated["spec"]["backends"][0]["workers"][0]["resources"] == {
        "requests": {"huawei.com/ascend-1980": "1", "hugepages-2Mi": "1Gi", "cpu": "2"},
        "limits": {"huawei.com/ascend-1980": "1", "hugepages-2Mi": "1Gi"},  # cpu may be overcommitted: no limit
    }
    assert response["warnings"] == [
        f"spec.backends[0].workers[0].resources.limits[{name}]: set to the request, {value}: Kubernetes does not "
        "overcommit extended resources and huge pages, so a container that requests one needs a limit equal to the "
        "request"
        for name, value in (("huawei.com/ascend-1980", "1"), ("hugepages-2Mi", "1Gi"))
    ]
    # A limit given is kept (one that differs from the request is the validating webhook's to refuse).
    worker["resources"]["limits"] = {"huawei.com/ascend-1980": "1"}
    mutated, _ = await _mutated(webhook, obj)
    assert mutated["spec"]["backends"][0]["workers"][0]["resources"]["limits"] == {
        "huawei.com/ascend-1980": "1",
        "hugepages-2Mi": "1Gi",
    }
