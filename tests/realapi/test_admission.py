"""What a user gets back from a real kube-apiserver v1.36 for ModelBoosters, with our webhook registered by URL
(`real_webhook`, for the test's namespace only) and without it (the CRD's schema and CEL rules alone).

kube-apiserver runs mutating webhooks, then the CRD's schema and CEL rules, then validating webhooks. The
expected lines are the hand-written table of tests/unit/test_examples.py (docs/design/api.md §3,
docs/design/validation.md §6); the same checks against the fake API server are tests/e2e/test_admission.py.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiException

from shared.defaults import apply_defaults
from tests.e2e.harness import raw_exchange
from tests.e2e.user import EXAMPLES, custom, get_booster, load_example, renamed
from tests.realapi.session import RealSession
from tests.realapi.webhook import Registration
from tests.unit.test_examples import CEL_LINES, EXPECTED_REJECTIONS

VALIDATING = "validate.modelboosters.workload.serving.volcano.sh"
INVALID = sorted((EXAMPLES / "invalid").glob("*.yaml"))
BY_CEL = [path for path in INVALID if EXPECTED_REJECTIONS[path.name][1]]
CAUSE_REASONS = {"Forbidden": "FieldValueForbidden", "Required value": "FieldValueRequired"}
WORKLOAD, VERSION, PLURAL = "workload.serving.volcano.sh", "v1alpha1", "modelboosters"


def _path(namespace: str, name: str = "") -> str:
    base = f"/apis/{WORKLOAD}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    return f"{base}/{name}" if name else base


def _refused(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as refused:
        call()
    status: dict[str, Any] = json.loads(refused.value.body or "{}")
    assert (status["kind"], status["status"]) == ("Status", "Failure")
    return int(refused.value.status), status


def _cel_messages(name: str, lines: list[str]) -> set[str]:
    """kube-apiserver's message for CEL failures: one error inline, several in brackets in the order the rules
    ran (which the API does not promise)."""
    prefix = f'ModelBooster.workload.serving.volcano.sh "{name}" is invalid: '
    if len(lines) == 1:
        return {prefix + lines[0]}
    return {prefix + "[" + ", ".join(order) + "]" for order in itertools.permutations(lines)}


def _causes(status: dict[str, Any]) -> list[str]:
    return sorted(f"{cause['field']}: {cause['message']}" for cause in status["details"]["causes"])


@pytest.mark.parametrize("path", INVALID, ids=lambda path: path.name)
def test_invalid_example_is_refused_with_the_promised_message(
    real_webhook: Registration, real_user: RealSession, path: Path
) -> None:
    document = renamed(load_example(f"invalid/{path.name}"), path.stem, real_webhook.namespace)
    lines, by_cel = EXPECTED_REJECTIONS[path.name]

    code, status = _refused(
        lambda: custom(real_user).create_namespaced_custom_object(
            WORKLOAD, VERSION, real_webhook.namespace, PLURAL, document
        )
    )

    assert (code, status["reason"]) == (422, "Invalid")
    if by_cel:
        lines = CEL_LINES.get(path.name, lines)
        assert status["message"] in _cel_messages(path.stem, lines)
    else:
        assert status["message"] == f'admission webhook "{VALIDATING}" denied the request: validation failed:\n' + (
            "\n".join(f"  - {line}" for line in lines)
        )
    assert _causes(status) == sorted(lines)
    assert get_booster(real_user, real_webhook.namespace, path.stem) is None


@pytest.mark.parametrize("path", BY_CEL, ids=lambda path: path.name)
def test_crd_cel_rules_alone_refuse_each_unsupported_feature(
    real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession, path: Path
) -> None:
    """No webhook in this namespace: the CRD's rules give the webhook's lines, `reason` and `fieldPath` kept."""
    document = renamed(load_example(f"invalid/{path.name}"), path.stem, real_namespace)
    lines = CEL_LINES.get(path.name, EXPECTED_REJECTIONS[path.name][0])

    code, status = _refused(
        lambda: custom(real_user).create_namespaced_custom_object(WORKLOAD, VERSION, real_namespace, PLURAL, document)
    )

    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] in _cel_messages(path.stem, lines)
    assert _causes(status) == sorted(lines)
    # Each rule's `reason` is honoured: the cause's type matches the words of its line.
    assert sorted(cause["reason"] for cause in status["details"]["causes"]) == sorted(
        next(reason for words, reason in CAUSE_REASONS.items() if f": {words}: " in line) for line in lines
    )


def test_webhook_stores_the_shared_defaults_and_warns(real_webhook: Registration, real_user: RealSession) -> None:
    document = renamed(load_example("single-vllm-cpu.yaml"), "defaults", real_webhook.namespace)
    document["spec"]["backends"][0]["workers"][0]["pods"] = 0
    for key in ("routeWeight",):
        document["spec"]["backends"][0].pop(key, None)

    created, headers = raw_exchange(real_user.user, "POST", _path(real_webhook.namespace), body=document)

    expected = apply_defaults(document).obj["spec"]
    assert created["spec"] == expected
    assert get_booster(real_user, real_webhook.namespace, "defaults")["spec"] == expected  # type: ignore[index]
    assert created["spec"]["backends"][0]["workers"][0]["pods"] == 1
    assert any("pods" in value for key, value in headers if key.lower() == "warning")


def test_server_side_dry_run_is_admitted_defaulted_and_not_stored(
    real_webhook: Registration, real_user: RealSession
) -> None:
    document = renamed(load_example("single-vllm-cpu.yaml"), "dry", real_webhook.namespace)
    document["spec"]["backends"][0]["workers"][0]["pods"] = 0
    path = f"{_path(real_webhook.namespace, 'dry')}?fieldManager=kubectl&force=true&dryRun=All"

    answer, _ = raw_exchange(real_user.user, "PATCH", path, body=document, content_type="application/apply-patch+yaml")

    assert answer["spec"] == apply_defaults(document).obj["spec"]
    assert get_booster(real_user, real_webhook.namespace, "dry") is None


def test_worker_replicas_change_is_refused_by_the_webhook(real_webhook: Registration, real_user: RealSession) -> None:
    namespace = real_webhook.namespace
    raw_exchange(
        real_user.user, "POST", _path(namespace), body=renamed(load_example("single-vllm-cpu.yaml"), "fixed", namespace)
    )
    patch = [{"op": "replace", "path": "/spec/backends/0/workers/0/replicas", "value": 2}]

    code, status = _refused(
        lambda: raw_exchange(
            real_user.user, "PATCH", _path(namespace, "fixed"), body=patch, content_type="application/json-patch+json"
        )
    )

    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith(
        f'admission webhook "{VALIDATING}" denied the request: validation failed:\n'
        "  - spec.backends[0].workers[0].replicas: Forbidden: cannot change from 1 to 2"
    )


def _webhook_only_invalid(namespace: str) -> dict[str, Any]:
    """A ModelBooster the CRD accepts and only the webhook refuses (a vLLMDisaggregated backend without decode)."""
    return renamed(load_example("invalid/pd-without-decode.yaml"), "carried", namespace)


def test_updates_of_an_object_stored_without_the_webhook_are_not_locked_out(
    real_crds: list[dict[str, Any]],
    real_namespace: str,
    real_user: RealSession,
    real_webhook_server: Any,
) -> None:
    """An object stored while the webhook was not called (down, or registered later) stays manageable: metadata
    and status writes pass, spec changes that keep the old error pass with a warning, a new error is refused,
    and fixing the error passes (docs/webhook.md, "UPDATE semantics")."""
    from tests.realapi.webhook import register_webhook

    api = real_user.user
    stored, _ = raw_exchange(api, "POST", _path(real_namespace), body=_webhook_only_invalid(real_namespace))
    registration = register_webhook(api, real_webhook_server, namespace=real_namespace)
    try:
        labelled, headers = raw_exchange(
            api,
            "PATCH",
            _path(real_namespace, "carried"),
            body={"metadata": {"labels": {"team": "a"}}},
            content_type="application/merge-patch+json",
        )
        assert labelled["metadata"]["labels"] == {"team": "a"}
        assert labelled["spec"] == stored["spec"]  # never patched
        assert [value for key, value in headers if key.lower() == "warning"] == []

        status = {
            "status": {
                "conditions": [
                    {
                        "type": "Initialized",
                        "status": "False",
                        "reason": "Test",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        }
        written, _ = raw_exchange(
            api,
            "PATCH",
            _path(real_namespace, "carried") + "/status",
            body=status,
            content_type="application/merge-patch+json",
        )
        assert written["status"]["conditions"][0]["reason"] == "Test"

        edited = copy.deepcopy(written)
        edited["spec"]["backends"][0]["modelURI"] = "hf://Qwen/Qwen2.5-1.5B-Instruct"  # `workers` untouched
        replaced, headers = raw_exchange(api, "PUT", _path(real_namespace, "carried"), body=edited)
        assert replaced["spec"]["backends"][0]["modelURI"] == "hf://Qwen/Qwen2.5-1.5B-Instruct"
        warnings = [value for key, value in headers if key.lower() == "warning"]
        assert any("unchanged, so admitted" in warning for warning in warnings), warnings

        added = copy.deepcopy(replaced)
        added["spec"]["backends"][0]["minReplicas"] = 5
        added["spec"]["backends"][0]["maxReplicas"] = 1
        code, refusal = _refused(lambda: raw_exchange(api, "PUT", _path(real_namespace, "carried"), body=added))
        assert (code, refusal["reason"]) == (422, "Invalid")
        assert "minReplicas" in refusal["message"]

        fixed = copy.deepcopy(replaced)
        prefill = fixed["spec"]["backends"][0]["workers"][0]
        fixed["spec"]["backends"][0]["workers"].append({**prefill, "type": "decode"})
        _, headers = raw_exchange(api, "PUT", _path(real_namespace, "carried"), body=fixed)
        assert [value for key, value in headers if key.lower() == "warning"] == []
    finally:
        registration.remove(api)
