"""Both backend shapes over HTTPS (docs/design/api.md §8): the mutating webhook defaults a Kthena v1.0
object without rewriting its shape, and the validating webhook answers the shape rule with one cause."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch

from tests.webhook.conftest import Webhook
from tests.webhook.objects import deep, single_vllm
from tests.webhook.reviews import as_stored, review
from webhook.app import MUTATE_PATH, VALIDATE_PATH

SHAPE = (
    "exactly one of spec.backend (one backend, as Kthena v1.0 writes it) or spec.backends (a list of backends), "
    "not both"
)


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


async def test_both_shapes_are_one_denial_with_one_cause(webhook: Webhook) -> None:
    obj = v1_object()
    obj["spec"]["backends"] = single_vllm()["spec"]["backends"]
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
    status = response["status"]
    assert (response["allowed"], status["code"], status["reason"]) == (False, 422, "Invalid")
    assert status["message"] == f"validation failed:\n  - spec: Required value: {SHAPE}"
    assert status["details"]["causes"] == [{"reason": "FieldValueRequired", "message": f"Required value: {SHAPE}",
                                            "field": "spec"}]  # fmt: skip


async def test_an_update_may_move_between_shapes(webhook: Webhook) -> None:
    old = as_stored(single_vllm())
    new = v1_object()
    new["spec"]["backend"]["workers"][0].update({"type": "server", "replicas": 1, "pods": 1})
    response = await webhook.admit(VALIDATE_PATH, review(operation="UPDATE", obj=new, old=old))
    assert response["allowed"] is True
    # And a denial on the way names the field the user wrote.
    new["spec"]["backend"]["workers"][0]["replicas"] = 3
    response = await webhook.admit(VALIDATE_PATH, review(operation="UPDATE", obj=new, old=old))
    assert [cause["field"] for cause in response["status"]["details"]["causes"]] == [
        "spec.backend.workers[0].replicas"
    ]
