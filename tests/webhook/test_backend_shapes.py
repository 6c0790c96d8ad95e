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


async def test_a_v04_object_scaled_from_zero_is_admitted_with_a_warning_saying_what_keeps_it_there(
    webhook: Webhook,
) -> None:
    """Kthena v0.4.0's webhook admitted `minReplicas: 0` beside `spec.autoscalingPolicy` (five of the eight
    objects of its own convert testdata have it): so do we, and the warning says why it stays at zero."""
    obj = v04_object()
    obj["spec"]["backend"]["minReplicas"] = 0
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=obj))
    serving = f"{obj['metadata']['name']}-{obj['spec']['backend']['name']}"
    assert response["warnings"] == [
        "spec.backend.minReplicas: 0 with spec.autoscalingPolicy: the backend starts with no pod, and its autoscaler "
        "reads the policy's metrics from the backend's pods, so nothing scales it up from zero; set minReplicas to "
        "1 to serve at once, or scale its ModelServing yourself (kubectl scale "
        f"modelservings.workload.serving.volcano.sh {serving} --replicas=1), after which the policy takes over"
    ]
    defaulted = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
    verdict = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=defaulted))
    assert verdict == {"uid": verdict["uid"], "allowed": True}


EXTERNAL = (
    '"true" may not be set beside an autoscaling policy: both would set the replicas (Kthena\'s autoscaler through '
    "the policy, and Inferno, KEDA or an HPA through /scale) and fight over them; remove the annotation "
    "modelbooster.io/external-replicas to let the policy scale the backends, or remove the autoscaling policy "
    "(spec.autoscalingPolicy, or each backend's own) to let the external scaler set the replicas"
)


async def test_external_replicas_beside_a_policy_is_denied_naming_both_fixes(webhook: Webhook) -> None:
    for obj in (v04_object(), as_stored(single_vllm())):
        if "backends" in obj["spec"]:  # a backend's own policy
            obj["spec"]["backends"][0].update(minReplicas=1, maxReplicas=3, autoscalingPolicy=deep(POLICY))
        obj["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "true"}
        response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
        assert response["allowed"] is False
        assert response["status"]["details"]["causes"] == [{
            "reason": "FieldValueForbidden", "message": f"Forbidden: {EXTERNAL}",
            "field": "metadata.annotations[modelbooster.io/external-replicas]"}]  # fmt: skip
        # Either fix is admitted.
        without_annotation = deep(obj)
        without_annotation["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "false"}
        allowed = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=without_annotation))
        assert allowed["allowed"] is True
        without_policy = deep(obj)
        without_policy["spec"].pop("autoscalingPolicy", None)
        for backend in without_policy["spec"].get("backends", []):
            backend.pop("autoscalingPolicy", None)
        allowed = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=without_policy))
        assert allowed["allowed"] is True
