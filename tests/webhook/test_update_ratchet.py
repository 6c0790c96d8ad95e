"""UPDATE semantics over HTTPS: objects stored under Kthena v0.1.0 stay manageable, new problems are refused.

Each write goes the way kube-apiserver sends it: the mutating webhook first, its JSON Patch applied, then the
validating webhook with the patched object and the stored `oldObject`. The stored objects are what a
cluster that ran Kthena v0.1.0 holds: accepted by Kthena's CRD (which declares `behavior`, `panicPolicy`,
`networkTopology`), and never defaulted by our mutating webhook.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import jsonpatch
import pytest

from shared.ratchet import MAX_FIELD_WARNINGS, MAX_WARNING_CHARS
from tests.webhook.conftest import Webhook
from tests.webhook.objects import deep, single_vllm
from tests.webhook.reviews import as_stored, review
from webhook.app import MUTATE_PATH, VALIDATE_PATH

BEHAVIOR = "behavior is not supported; create AutoscalingPolicy + Binding yourself"
PANIC = "panicPolicy is not supported; create AutoscalingPolicy + Binding yourself"
TOPOLOGY = "topology configuration of ModelServing is not supported; create the ModelServing yourself"
RATE_LIMIT = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
SUMMARY = (
    "fields carried over unchanged are not refused; the reconciler leaves this ModelBooster Failed, "
    "and its children untouched, until they are removed or fixed"
)
GC_USER = {
    "username": "system:serviceaccount:kube-system:generic-garbage-collector",
    "uid": "3c1c5c9e-57b5-4c1e-9f38-5d3c7b0c2f11",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
}
# As Kthena v0.1.0's CRD stored it: its defaults filled into the objects the user wrote.
KTHENA_BEHAVIOR = {
    "scaleUp": {
        "panicPolicy": {"panicThresholdPercent": 200, "period": "10s", "percent": 1000, "panicModeHold": "60s"},
        "stablePolicy": {"instances": 1, "percent": 100, "period": "15s", "selectPolicy": "Or"},
    },
    "scaleDown": {"instances": 1, "percent": 100, "period": "15s", "selectPolicy": "Or", "stabilizationWindow": "5m"},
}


def kthena_backend(name: str, *, behavior: bool = True) -> dict[str, Any]:
    """A backend-level autoscaled vLLM backend as written for Kthena v0.1.0 (no routeWeight, no pods)."""
    policy: dict[str, Any] = {
        "tolerancePercent": 10,
        "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": "10"}],
    }
    if behavior:
        policy["behavior"] = copy.deepcopy(KTHENA_BEHAVIOR)
    return {
        "name": name,
        "type": "vLLM",
        "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "minReplicas": 1,
        "maxReplicas": 3,
        "autoscalingPolicy": policy,
        "workers": [{"type": "server", "image": "vllm/vllm-openai:v0.8.5", "replicas": 1}],
    }


def stored(*backends: dict[str, Any]) -> dict[str, Any]:
    obj = single_vllm()
    obj["spec"]["backends"] = list(backends) or [kthena_backend("main")]
    live = as_stored(obj)
    live["metadata"].update(generation=3, resourceVersion="48213")
    live["status"] = {"observedGeneration": 3, "conditions": []}
    return live


def behavior_path(index: int) -> str:
    return f"spec.backends[{index}].autoscalingPolicy.behavior"


def carried(path: str, detail: str) -> str:
    """The warning of an unsupported field carried over unchanged: admitted, and still refused as a rule."""
    return f"unchanged, so admitted: {path}: Forbidden: {detail}"


def ignored(index: int) -> list[str]:
    path = behavior_path(index)
    return [carried(f"{path}.scaleUp.panicPolicy", PANIC), carried(path, BEHAVIOR)]


async def update(webhook: Webhook, new: dict[str, Any], old: dict[str, Any],
                 **request: Any) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """Mutate, apply the patch, validate: (mutating response, validating response)."""
    sent = review(operation="UPDATE", obj=new, old=old)
    sent["request"].update(request)
    mutated = await webhook.admit(MUTATE_PATH, sent)
    assert mutated["allowed"] is True
    if "patch" in mutated:
        ops = jsonpatch.JsonPatch.from_string(base64.b64decode(mutated["patch"]).decode())
        sent["request"]["object"] = ops.apply(sent["request"]["object"])
    validated = await webhook.admit(VALIDATE_PATH, sent)
    return mutated, validated


def denial_lines(response: dict[str, Any]) -> list[str]:
    assert response["allowed"] is False, response
    assert (response["status"]["code"], response["status"]["reason"]) == (422, "Invalid")
    lines: list[str] = response["status"]["message"].split("\n")
    assert lines[0] == "validation failed:"
    return lines[1:]


# --- never blocked ------------------------------------------------------------------------------------------


async def test_a_label_change_is_admitted_without_patch_or_warning(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    new["metadata"]["labels"] = {"team": "inference"}
    mutated, validated = await update(webhook, new, old)
    assert mutated == {"uid": mutated["uid"], "allowed": True}
    assert validated == {"uid": validated["uid"], "allowed": True}


async def test_the_garbage_collectors_finalizer_removal_on_a_terminating_object_is_admitted(webhook: Webhook) -> None:
    old = stored()
    old["metadata"].update(
        deletionTimestamp="2026-03-02T08:00:00Z",
        deletionGracePeriodSeconds=0,
        finalizers=["foregroundDeletion"],
    )
    new = deep(old)
    new["metadata"]["finalizers"] = []
    sent = review(operation="UPDATE", obj=new, old=old)
    sent["request"]["userInfo"] = GC_USER
    for path in (MUTATE_PATH, VALIDATE_PATH):
        assert await webhook.admit(path, sent) == {"uid": sent["request"]["uid"], "allowed": True}


async def test_owner_references_and_annotations_change_freely(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    new["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    new["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "0b5e0a34-1f6c-4c4e-9a43-6f8e2c1d9b10"}
    ]
    mutated, validated = await update(webhook, new, old)
    assert "patch" not in mutated
    assert validated == {"uid": validated["uid"], "allowed": True}


async def test_a_status_write_is_admitted_even_when_the_body_changes_spec(webhook: Webhook) -> None:
    # The API server ignores spec on a status write; the webhook must not refuse it either.
    old = stored()
    new = deep(old)
    new["status"] = {"observedGeneration": 3, "conditions": [{"type": "Failed", "status": "True"}]}
    new["spec"]["rateLimit"] = {"tokensPerUnit": 1}
    sent = review(operation="UPDATE", obj=new, old=old)
    sent["request"]["subResource"] = sent["request"]["requestSubResource"] = "status"
    for path in (MUTATE_PATH, VALIDATE_PATH):
        assert await webhook.admit(path, sent) == {"uid": sent["request"]["uid"], "allowed": True}


# --- carried over: admitted with warnings ---------------------------------------------------------------------


async def test_a_spec_change_elsewhere_is_admitted_and_warns_about_the_carried_over_fields(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    new["spec"]["backends"][0]["maxReplicas"] = 4
    mutated, validated = await update(webhook, new, old)
    # The defaults the stored object never had are filled in, and do not count as a change of the workers.
    ops = jsonpatch.JsonPatch.from_string(base64.b64decode(mutated["patch"]).decode())
    defaulted = ops.apply(new)["spec"]["backends"][0]
    assert (defaulted["routeWeight"], defaulted["workers"][0]["pods"]) == (100, 1)
    assert validated["allowed"] is True
    assert validated["warnings"] == [*ignored(0), SUMMARY]


async def test_backends_are_matched_by_name_not_position(webhook: Webhook) -> None:
    old = stored(kthena_backend("a"), kthena_backend("b", behavior=False))
    new = deep(old)
    new["spec"]["backends"].reverse()
    new["spec"]["backends"][0]["maxReplicas"] = 2  # b
    _, validated = await update(webhook, new, old)
    assert validated["allowed"] is True
    assert validated["warnings"] == [*ignored(1), SUMMARY]


async def test_a_carried_over_worker_field_is_admitted_while_the_workers_are_unchanged(webhook: Webhook) -> None:
    backend = kthena_backend("main", behavior=False)
    backend["workers"][0]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}
    old = stored(backend)
    new = deep(old)
    new["spec"]["backends"][0]["maxReplicas"] = 5
    _, validated = await update(webhook, new, old)
    assert validated["allowed"] is True
    assert validated["warnings"] == [carried("spec.backends[0].workers[0].networkTopology", TOPOLOGY), SUMMARY]


async def test_a_carried_over_invalid_value_warns_with_the_rule_and_stays_admitted(webhook: Webhook) -> None:
    # No autoscaling, yet minReplicas != maxReplicas: Kthena's CRD took it when its webhook was off.
    backend = kthena_backend("main", behavior=False)
    del backend["autoscalingPolicy"]
    old = stored(backend)
    new = deep(old)
    new["spec"]["modelMatch"] = {"headers": {"x-model": {"exact": "qwen"}}}
    _, validated = await update(webhook, new, old)
    assert validated["allowed"] is True
    # The rule's message names both fixes; a warning is clipped to kube-apiserver's 256 characters.
    first, summary = validated["warnings"]
    assert first.startswith(
        'unchanged, so admitted: spec.backends[0]: Invalid value: "minReplicas=1, maxReplicas=3": '
        "minReplicas and maxReplicas must be equal when no autoscaling is set; to let replicas move between them, "
        "set autoscalingPolicy, or annotate"
    )
    assert len(first) <= 256
    assert summary == SUMMARY


# --- changed: refused by name ---------------------------------------------------------------------------------


async def test_creating_the_same_object_is_refused(webhook: Webhook) -> None:
    obj = stored()
    del obj["status"]
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
    assert denial_lines(response) == [
        f"  - {behavior_path(0)}.scaleUp.panicPolicy: Forbidden: {PANIC}",
        f"  - {behavior_path(0)}: Forbidden: {BEHAVIOR}",
    ]
    assert "warnings" not in response


async def test_changing_a_carried_over_field_is_refused_for_that_field_only(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    new["spec"]["backends"][0]["autoscalingPolicy"]["behavior"]["scaleDown"]["stabilizationWindow"] = "10m"
    _, validated = await update(webhook, new, old)
    assert denial_lines(validated) == [f"  - {behavior_path(0)}: Forbidden: {BEHAVIOR}"]
    # The panicPolicy inside it did not change: still only a warning.
    assert validated["warnings"] == [ignored(0)[0], SUMMARY]


@pytest.mark.parametrize(
    ("where", "value", "path", "detail"),
    [
        ("spec", {"tokensPerUnit": 10, "unit": "second"}, "spec.rateLimit", RATE_LIMIT),
        ("backend", {"mode": "hard"}, "spec.backends[0].topology", TOPOLOGY),
        ("worker", {"mode": "soft"}, "spec.backends[0].workers[0].networkTopology", TOPOLOGY),
    ],
)
async def test_adding_an_unsupported_field_on_update_is_refused_by_name(
    webhook: Webhook, where: str, value: dict[str, Any], path: str, detail: str
) -> None:
    old = stored()
    new = deep(old)
    holder = {
        "spec": new["spec"],
        "backend": new["spec"]["backends"][0],
        "worker": new["spec"]["backends"][0]["workers"][0],
    }[where]
    holder[path.rsplit(".", 1)[1]] = value
    _, validated = await update(webhook, new, old)
    assert denial_lines(validated) == [f"  - {path}: Forbidden: {detail}"]
    assert validated["status"]["details"]["causes"] == [
        {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": path}
    ]
    assert validated["warnings"] == [*ignored(0), SUMMARY]


async def test_a_new_backend_with_the_same_behavior_is_refused(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    new["spec"]["backends"].append(kthena_backend("second"))
    _, validated = await update(webhook, new, old)
    assert denial_lines(validated) == [
        f"  - {behavior_path(1)}.scaleUp.panicPolicy: Forbidden: {PANIC}",
        f"  - {behavior_path(1)}: Forbidden: {BEHAVIOR}",
    ]


async def test_renaming_the_backend_that_carries_it_is_refused(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    new["spec"]["backends"][0]["name"] = "renamed"
    _, validated = await update(webhook, new, old)
    assert [line.split(": ")[0] for line in denial_lines(validated)] == [
        f"  - {behavior_path(0)}.scaleUp.panicPolicy",
        f"  - {behavior_path(0)}",
    ]


async def test_a_worker_change_re_checks_a_carried_over_worker_field(webhook: Webhook) -> None:
    # Workers have no identity (an atomic list): any change to them re-checks everything inside.
    backend = kthena_backend("main", behavior=False)
    backend["workers"][0]["networkTopology"] = {"mode": "hard"}
    old = stored(backend)
    new = deep(old)
    new["spec"]["backends"][0]["workers"][0]["image"] = "vllm/vllm-openai:v0.10.1"
    _, validated = await update(webhook, new, old)
    assert denial_lines(validated) == [f"  - spec.backends[0].workers[0].networkTopology: Forbidden: {TOPOLOGY}"]


async def test_a_cross_field_error_is_refused_when_the_update_changes_a_field_it_names(webhook: Webhook) -> None:
    backend = kthena_backend("main", behavior=False)
    backend.update(minReplicas=3, maxReplicas=2)
    old = stored(backend)
    new = deep(old)
    new["spec"]["backends"][0]["maxReplicas"] = 1  # minReplicas, the error's path, is unchanged
    _, validated = await update(webhook, new, old)
    assert denial_lines(validated) == [
        "  - spec.backends[0].minReplicas: Invalid value: 3: minReplicas cannot be greater than maxReplicas"
    ]


async def test_the_replicas_rule_still_refuses_on_an_object_that_carries_fields(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    new["spec"]["backends"][0]["workers"][0]["replicas"] = 2
    _, validated = await update(webhook, new, old)
    lines = denial_lines(validated)
    assert [line.split(": ")[0] for line in lines] == ["  - spec.backends[0].workers[0].replicas"]
    assert "cannot change from 1 to 2" in lines[0]
    assert validated["warnings"] == [*ignored(0), SUMMARY]


# --- fixed -----------------------------------------------------------------------------------------------------


async def test_removing_the_field_is_admitted_without_warnings(webhook: Webhook) -> None:
    old = stored()
    new = deep(old)
    del new["spec"]["backends"][0]["autoscalingPolicy"]["behavior"]
    _, validated = await update(webhook, new, old)
    assert validated == {"uid": validated["uid"], "allowed": True}


# --- bounded ---------------------------------------------------------------------------------------------------


async def test_warnings_stay_within_what_kube_apiserver_passes_on(webhook: Webhook) -> None:
    backends = [kthena_backend(f"b{i:02d}") for i in range(16)]
    for backend in backends:
        backend["workers"][0]["networkTopology"] = {"mode": "hard"}
    old = stored(*backends)
    new = deep(old)
    new["spec"]["modelMatch"] = {"headers": {"x-model": {"exact": "qwen"}}}
    _, validated = await update(webhook, new, old)
    assert validated["allowed"] is True
    warnings = validated["warnings"]
    # In the validation's order: per backend, the worker's field, then the policy's.
    per_field = [
        line
        for i in range(16)
        for line in (carried(f"spec.backends[{i}].workers[0].networkTopology", TOPOLOGY), *ignored(i))
    ]
    assert warnings == [
        *per_field[:MAX_FIELD_WARNINGS],
        f"and {len(per_field) - MAX_FIELD_WARNINGS} more fields carried over unchanged",
        SUMMARY,
    ]
    assert all(len(warning) <= MAX_WARNING_CHARS and warning.isprintable() for warning in warnings)
    assert sum(len(warning) for warning in warnings) <= 4096
