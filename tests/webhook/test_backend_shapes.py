"""The backend shapes over HTTPS (docs/design/api.md §8): the mutating webhook defaults a Kthena v1.0 or
v0.2-v0.4 object without rewriting its shape, and the validating webhook answers each shape rule with its cause."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch

from tests.webhook.conftest import Webhook
from tests.webhook.objects import deep, single_vllm
from tests.webhook.reviews import as_stored, review
from webhook.app import MUTATE_PATH, VALIDATE_PATH

BOTH = (
    "may not be set together with spec.backend: keep spec.backend for one backend, or spec.backends for a list of "
    "backends, and remove the other"
)
NEITHER = (
    "must specify one of spec.backend (one backend, as Kthena v0.2 and later write it) or spec.backends (a list of "
    "backends, as Kthena v0.1.0 writes it)"
)
POLICY = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}


def v1_object() -> dict[str, Any]:
    """single_vllm written as Kthena v1.0 writes it, with its worker's defaulted fields left out."""
    obj = single_vllm()
    backend = obj["spec"].pop("backends")[0]
    del backend["minReplicas"], backend["maxReplicas"]
    for key in ("type", "replicas", "pods"):
        del backend["workers"][0][key]
    obj["spec"]["backend"] = {**backend, "replicas": 2}
    obj["spec"]["name"] = "qwen-chat"
    return as_stored(obj)


async def test_mutation_fills_defaults_inside_spec_backend_only(webhook: Webhook) -> None:
    obj = v1_object()
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj))
    ops = json.loads(base64.b64decode(response["patch"]))
    assert {op["op"] for op in ops} == {"add"}
    assert all(op["path"].startswith("/spec/backend/") for op in ops)
    expected = deep(obj)
    # The scheduler Kthena v1.0's ModelServing CRD would have defaulted, and the worker defaults.
    expected["spec"]["backend"]["schedulerName"] = "volcano"
    expected["spec"]["backend"]["workers"][0].update({"type": "server", "replicas": 1, "pods": 1})
    assert jsonpatch.apply_patch(obj, ops) == expected
    assert "warnings" not in response


async def test_a_v1_object_is_allowed(webhook: Webhook) -> None:
    obj = v1_object()
    obj["spec"]["backend"]["workers"][0].update({"type": "server", "replicas": 1, "pods": 1})
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
    assert response == {"uid": response["uid"], "allowed": True}


def v04_object() -> dict[str, Any]:
    """single_vllm written as Kthena v0.2-v0.4 write it: its backend under spec.backend, scaled by the model's
    policy, worker defaults left out."""
    obj = single_vllm()
    backend = obj["spec"].pop("backends")[0]
    for key in ("type", "replicas", "pods"):
        del backend["workers"][0][key]
    backend.pop("routeWeight", None)
    obj["spec"]["backend"] = {**backend, "minReplicas": 1, "maxReplicas": 3}
    obj["spec"]["autoscalingPolicy"] = deep(POLICY)
    return as_stored(obj)


async def test_both_shapes_are_one_denial_with_one_forbidden_cause(webhook: Webhook) -> None:
    obj = v1_object()
    obj["spec"]["backends"] = single_vllm()["spec"]["backends"]
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
    status = response["status"]
    assert (response["allowed"], status["code"], status["reason"]) == (False, 422, "Invalid")
    assert status["message"] == f"validation failed:\n  - spec.backends: Forbidden: {BOTH}"
    assert status["details"]["causes"] == [{"reason": "FieldValueForbidden", "message": f"Forbidden: {BOTH}",
                                            "field": "spec.backends"}]  # fmt: skip


async def test_no_shape_is_one_denial_with_one_required_cause(webhook: Webhook) -> None:
    obj = v1_object()
    del obj["spec"]["backend"]
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
    assert response["status"]["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": f"Required value: {NEITHER}", "field": "spec"}
    ]


async def test_a_v04_object_is_defaulted_in_its_shape_and_allowed(webhook: Webhook) -> None:
    obj = v04_object()
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj))
    ops = json.loads(base64.b64decode(response["patch"]))
    expected = deep(obj)
    expected["spec"]["backend"]["schedulerName"] = "volcano"
    expected["spec"]["backend"]["workers"][0].update({"type": "server", "replicas": 1, "pods": 1})
    # The policy's own default only: none of Kthena v0.1.0's optimizer defaults.
    expected["spec"]["autoscalingPolicy"]["tolerancePercent"] = 10
    defaulted = jsonpatch.apply_patch(obj, ops)
    assert defaulted == expected
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=defaulted))
    assert response == {"uid": response["uid"], "allowed": True}


async def test_a_v1_object_with_a_policy_gets_every_cause_at_once(webhook: Webhook) -> None:
    obj = v1_object()
    obj["spec"]["backend"]["workers"][0].update({"type": "server", "replicas": 1, "pods": 1, "image": " "})
    obj["spec"]["autoscalingPolicy"] = deep(POLICY)
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
    assert [cause["field"] for cause in response["status"]["details"]["causes"]] == [
        "spec.autoscalingPolicy",
        "spec.backend.workers[0].image",
    ]


async def test_an_update_may_move_between_shapes(webhook: Webhook) -> None:
    old = as_stored(single_vllm())
    new = v1_object()
    new["spec"]["backend"]["workers"][0].update({"type": "server", "replicas": 1, "pods": 1})
    response = await webhook.admit(VALIDATE_PATH, review(operation="UPDATE", obj=new, old=old))
    assert response["allowed"] is True
    # And a denial on the way names the field the user wrote.
    new["spec"]["backend"]["workers"][0]["replicas"] = 3
    response = await webhook.admit(VALIDATE_PATH, review(operation="UPDATE", obj=new, old=old))
    assert [cause["field"] for cause in response["status"]["details"]["causes"]] == ["spec.backend.workers[0].replicas"]
