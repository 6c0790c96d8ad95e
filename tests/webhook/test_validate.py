"""The validating webhook over HTTPS: valid objects pass, every unsupported feature is denied by name.

Expected messages are written from docs/design/api.md §3 (the unsupported features) and
docs/design/validation.md §2 (the line format), §4 and §6.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.webhook.conftest import Webhook
from tests.webhook.objects import deep, single_vllm, two_backends
from tests.webhook.reviews import as_stored, review
from webhook.app import VALIDATE_PATH

RATE_LIMIT = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
TOPOLOGY = "topology configuration of ModelServing is not supported; create the ModelServing yourself"
BEHAVIOR = "behavior is not supported; create AutoscalingPolicy + Binding yourself"
PANIC = "panicPolicy is not supported"
POLICY = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": "10"}], "tolerancePercent": 10}


async def _validate(webhook: Webhook, obj: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=as_stored(obj), **kwargs))


@pytest.mark.parametrize("make", [single_vllm, two_backends], ids=["single-vllm", "two-backends"])
async def test_valid_objects_are_allowed(webhook: Webhook, make: Any) -> None:
    response = await _validate(webhook, make())
    assert response == {"uid": response["uid"], "allowed": True}


def _with(path: str, value: Any, *, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of `base` (default single_vllm) with `value` set at a dotted path (`backends.0.x`) under spec."""
    obj = deep(base or single_vllm())
    target: Any = obj["spec"]
    *parents, last = path.split(".")
    for key in parents:
        target = target[int(key)] if key.isdigit() else target.setdefault(key, {})
    target[last] = value
    return obj


UNSUPPORTED = [
    ("spec.rateLimit", _with("rateLimit", {"tokensPerUnit": 10, "unit": "second"}), RATE_LIMIT),
    ("spec.backends[0].rateLimit", _with("backends.0.rateLimit", {"inputTokensPerUnit": 5}), RATE_LIMIT),
    ("spec.backends[0].networkTopology", _with("backends.0.networkTopology", {"highestTierAllowed": 1}), TOPOLOGY),
    ("spec.backends[0].topology", _with("backends.0.topology", {"mode": "hard"}), TOPOLOGY),
    (
        "spec.backends[0].workers[0].networkTopology",
        _with("backends.0.workers.0.networkTopology", {"mode": "soft"}),
        TOPOLOGY,
    ),
    (
        "spec.autoscalingPolicy.behavior",
        _with("autoscalingPolicy.behavior", {"scaleDown": {"stabilizationWindow": "5m"}}, base=two_backends()),
        BEHAVIOR,
    ),
    (
        "spec.backends[0].autoscalingPolicy.behavior",
        _with("backends.0.autoscalingPolicy", {**POLICY, "behavior": {"scaleDown": {"instances": 1}}}),
        BEHAVIOR,
    ),
]


@pytest.mark.parametrize(("path", "obj", "detail"), UNSUPPORTED, ids=[path for path, _, _ in UNSUPPORTED])
async def test_each_unsupported_feature_is_denied_with_its_message(
    webhook: Webhook, path: str, obj: dict[str, Any], detail: str
) -> None:
    response = await _validate(webhook, obj)
    assert response["allowed"] is False
    status = response["status"]
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["status"] == "Failure"
    assert status["message"] == f"validation failed:\n  - {path}: Forbidden: {detail}"
    assert status["details"] == {
        "name": obj["metadata"]["name"],
        "group": "workload.serving.volcano.sh",
        "kind": "ModelBooster",
        "causes": [{"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": path}],
    }


@pytest.mark.parametrize(
    ("holder", "prefix"),
    [
        ("autoscalingPolicy", "spec.autoscalingPolicy"),
        ("backends.0.autoscalingPolicy", "spec.backends[0].autoscalingPolicy"),
    ],
)
async def test_panic_policy_is_denied_along_with_its_behavior(webhook: Webhook, holder: str, prefix: str) -> None:
    behavior = {"scaleUp": {"panicPolicy": {"panicThresholdPercent": 200, "period": "10s"}}}
    if holder == "autoscalingPolicy":
        obj = _with("autoscalingPolicy.behavior", behavior, base=two_backends())
    else:
        obj = _with(holder, {**POLICY, "behavior": behavior})
    response = await _validate(webhook, obj)
    lines = response["status"]["message"].split("\n")
    assert lines[0] == "validation failed:"
    # Both errors, the panicPolicy first (docs/design/api.md §3).
    assert lines[1].startswith(f"  - {prefix}.behavior.scaleUp.panicPolicy: Forbidden: {PANIC}")
    assert lines[2] == f"  - {prefix}.behavior: Forbidden: {BEHAVIOR}"
    assert len(lines) == 3
    causes = response["status"]["details"]["causes"]
    assert [cause["field"] for cause in causes] == [f"{prefix}.behavior.scaleUp.panicPolicy", f"{prefix}.behavior"]


async def test_every_field_error_becomes_one_cause(webhook: Webhook) -> None:
    obj = _with("rateLimit", {"tokensPerUnit": 1})
    obj["spec"]["backends"][0]["topology"] = {"mode": "hard"}
    response = await _validate(webhook, obj)
    status = response["status"]
    lines = status["message"].split("\n")[1:]
    assert len(lines) == len(status["details"]["causes"]) == 2
    for line, cause in zip(lines, status["details"]["causes"], strict=True):
        # Each cause is its message line, split into field and body as kube-apiserver does.
        assert line == f"  - {cause['field']}: {cause['message']}"


async def test_an_object_that_does_not_decode_is_a_denial_listing_the_fields(webhook: Webhook) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["minReplicas"] = "one"
    obj["spec"]["backends"][0]["workers"][0]["replicas"] = -1
    response = await _validate(webhook, obj)
    status = response["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert [cause["field"] for cause in status["details"]["causes"]] == [
        "spec.backends[0].minReplicas",
        "spec.backends[0].workers[0].replicas",
    ]
    assert status["message"].startswith("validation failed:\n  - spec.backends[0].minReplicas: ")


async def test_an_object_without_spec_is_denied(webhook: Webhook) -> None:
    obj = single_vllm()
    del obj["spec"]
    response = await _validate(webhook, obj)
    assert response["status"]["message"].startswith("validation failed:\n  - spec: Required value")


async def test_the_reference_scope_rule_still_applies(webhook: Webhook) -> None:
    # The reference's rule, docs/design/validation.md §4 item 4, with our wording for the no-autoscaling rule.
    obj = _with("backends.0.maxReplicas", 3)
    response = await _validate(webhook, obj)
    assert response["status"]["message"] == (
        "validation failed:\n"
        '  - spec.backends[0]: Invalid value: "minReplicas=1, maxReplicas=3": '
        "minReplicas and maxReplicas must be equal when no autoscaling is set; to let replicas move between them, "
        'set autoscalingPolicy, or annotate the ModelBooster modelbooster.io/external-replicas: "true" so they '
        "are set from outside (Inferno, KEDA or an HPA)"
    )


async def test_the_external_replicas_opt_in_admits_a_range_without_autoscaling(webhook: Webhook) -> None:
    # shared/external_scaling.py: replicas set from outside between the bounds; no policy needed.
    obj = _with("backends.0.maxReplicas", 3)
    obj["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "true"}
    response = await _validate(webhook, obj)
    assert response["allowed"] is True


async def test_the_external_replicas_opt_in_takes_true_or_false_only(webhook: Webhook) -> None:
    obj = _with("backends.0.maxReplicas", 3)
    obj["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "yes"}
    response = await _validate(webhook, obj)
    assert response["status"]["message"].endswith(
        '\n  - metadata.annotations[modelbooster.io/external-replicas]: Invalid value: "yes": '
        "must be 'true' or 'false'"
    )


async def test_unsupported_backend_type_is_denied(webhook: Webhook) -> None:
    response = await _validate(webhook, _with("backends.0.type", "MindIE"))
    assert response["allowed"] is False
    assert "not supported yet; supported: vLLM, vLLMDisaggregated, SGLang" in response["status"]["message"]


async def test_an_sglang_backend_is_admitted_and_two_workers_are_not(webhook: Webhook) -> None:
    response = await _validate(webhook, _with("backends.0.type", "SGLang"))
    assert response["allowed"] is True
    two = _with("backends.0.type", "SGLang")
    two["spec"]["backends"][0]["workers"].append(deep(two["spec"]["backends"][0]["workers"][0]))
    refused = await _validate(webhook, two)
    assert refused["allowed"] is False
    assert "If backend type is 'SGLang', there must be exactly one worker" in refused["status"]["message"]


async def test_update_checks_the_old_object(webhook: Webhook) -> None:
    old = as_stored(single_vllm())
    unchanged = await webhook.admit(VALIDATE_PATH, review(operation="UPDATE", obj=deep(old), old=old))
    assert unchanged["allowed"] is True
    new = deep(old)
    new["spec"]["backends"][0]["workers"][0]["replicas"] = 2
    response = await webhook.admit(VALIDATE_PATH, review(operation="UPDATE", obj=new, old=old))
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert message.startswith("validation failed:\n  - spec.backends[0].workers[0].replicas: Forbidden: ")
    assert "delete and recreate" in message
    # The same object as a CREATE has no old object to compare with, so it is fine.
    assert (await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=new)))["allowed"] is True


async def test_dry_run_gets_the_same_answer(webhook: Webhook) -> None:
    obj = _with("rateLimit", {"tokensPerUnit": 1})
    real = await _validate(webhook, obj)
    dry = await _validate(webhook, obj, dry_run=True)
    assert dry["status"] == real["status"]


async def test_the_denial_keeps_a_generate_name_object_identifiable(webhook: Webhook) -> None:
    obj = _with("rateLimit", {"tokensPerUnit": 1})
    obj["metadata"] = {"generateName": "qwen-", "namespace": "default"}
    sent = review(operation="CREATE", obj=obj)
    response = await webhook.admit(VALIDATE_PATH, sent)
    assert response["status"]["details"]["name"] == "qwen-"


async def test_a_quoted_value_without_a_utf8_form_is_escaped_in_the_denial(webhook: Webhook) -> None:
    # A lone surrogate is valid JSON text ("\ud800") but has no UTF-8 form: quoting it back must not fail.
    response = await _validate(webhook, _with("backends.0.workers.0.image", "\ud800 x"))
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        "validation failed:\n  - spec.backends[0].workers[0].image: Invalid value: \"\ud800 x\": "
        "invalid container image reference: image cannot contain spaces"
    )


async def test_a_denial_lists_the_schema_and_the_rule_errors_together(webhook: Webhook) -> None:
    """Every error at once (docs/design/validation.md §10): a quantity that does not decode and an unsupported
    `behavior`, in one denial with one cause each, as kube-apiserver reports every field error of a create."""
    obj = _with("autoscalingPolicy.behavior", {"scaleUp": {}}, base=two_backends())
    obj["spec"]["backends"][0]["workers"][0].setdefault("resources", {}).setdefault("limits", {})["memory"] = "8GB"
    response = await _validate(webhook, obj)
    assert response["allowed"] is False
    causes = [(cause["field"], cause["reason"]) for cause in response["status"]["details"]["causes"]]
    assert causes == [
        ("spec.backends[0].workers[0].resources.limits[memory]", "FieldValueInvalid"),
        ("spec.autoscalingPolicy.behavior", "FieldValueForbidden"),
    ]
    assert response["status"]["message"].endswith(f"\n  - spec.autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}")
