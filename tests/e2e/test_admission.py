"""What a user gets back from the API server for ModelBoosters our rules refuse.

kube-apiserver runs, in order: mutating webhooks, the CRD's schema and CEL rules, validating webhooks. So
the four unsupported features (declared in the CRD and guarded by CEL rules worded like the webhook,
docs/design/api.md §3) are refused by the CEL rules before the validating webhook is asked, with the same lines
(a worker's field excepted: its rule sits on the backend, tests/unit/test_examples.py CEL_LINES);
everything only the webhook checks comes back as `admission webhook "<name>" denied the request: ...`.
The expected lines are the hand-written table of tests/unit/test_examples.py (docs/design/api.md §3,
docs/design/validation.md §6).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiException

from tests.e2e.harness import Cluster, raw_exchange
from tests.e2e.user import (
    EXAMPLES,
    create_booster,
    delete_booster,
    get_booster,
    load_example,
    wait_condition,
)
from tests.unit.test_examples import CEL_LINES, EXPECTED_REJECTIONS

VALIDATING = "validate.modelboosters.workload.serving.volcano.sh"
INVALID = sorted((EXAMPLES / "invalid").glob("*.yaml"))


def _refusal(error: ApiException) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(error.body or "{}")
    assert (status["kind"], status["status"]) == ("Status", "Failure")
    return status


def test_every_invalid_example_is_tried() -> None:
    assert sorted(path.name for path in INVALID) == sorted(EXPECTED_REJECTIONS)


@pytest.mark.parametrize("path", INVALID, ids=lambda path: path.name)
def test_invalid_example_is_refused_with_the_promised_message(cluster: Cluster, path: Path) -> None:
    document = load_example(f"invalid/{path.name}")
    document["metadata"]["namespace"] = "e2e"
    name = document["metadata"]["name"]
    lines, by_cel = EXPECTED_REJECTIONS[path.name]

    with pytest.raises(ApiException) as refused:
        create_booster(cluster, document)

    assert refused.value.status == 422
    status = _refusal(refused.value)
    assert status["reason"] == "Invalid"
    if by_cel:
        # The CRD's CEL rules answer first, in kube-apiserver's words: one error inline, several in brackets
        # (in the order the rules ran, which the API does not promise).
        lines = CEL_LINES.get(path.name, lines)
        prefix = f'ModelBooster.workload.serving.volcano.sh "{name}" is invalid: '
        shown = (
            {prefix + lines[0]}
            if len(lines) == 1
            else {prefix + "[" + ", ".join(order) + "]" for order in itertools.permutations(lines)}
        )
        assert status["message"] in shown
    else:
        assert status["message"] == f'admission webhook "{VALIDATING}" denied the request: validation failed:\n' + (
            "\n".join(f"  - {line}" for line in lines)
        )
    # One cause per field error, so clients can read them one by one.
    causes = status["details"]["causes"]
    assert sorted(f"{cause['field']}: {cause['message']}" for cause in causes) == sorted(lines)
    assert get_booster(cluster, "e2e", name) is None


def test_an_update_that_changes_worker_replicas_is_denied_by_the_webhook(cluster: Cluster) -> None:
    document = load_example("single-vllm-cpu.yaml")
    document["metadata"].update(name="immutable-replicas", namespace="e2e")
    create_booster(cluster, document)
    wait_condition(cluster, "e2e", "immutable-replicas", "Initialized", "True")
    from tests.e2e.user import custom

    patch = [{"op": "replace", "path": "/spec/backends/0/workers/0/replicas", "value": 2}]
    with pytest.raises(ApiException) as refused:
        custom(cluster).patch_namespaced_custom_object(
            "workload.serving.volcano.sh", "v1alpha1", "e2e", "modelboosters", "immutable-replicas", patch,
            _content_type="application/json-patch+json",
        )  # fmt: skip
    status = _refusal(refused.value)
    assert refused.value.status == 422
    assert status["message"] == (
        f'admission webhook "{VALIDATING}" denied the request: validation failed:\n'
        "  - spec.backends[0].workers[0].replicas: Forbidden: cannot change from 1 to 2: the generated "
        "ModelServing's gangPolicy.minRoleReplicas is immutable; delete and recreate the ModelBooster (or give "
        "the backend a new name) to change it"
    )
    stored = get_booster(cluster, "e2e", "immutable-replicas")
    assert stored is not None
    assert stored["spec"]["backends"][0]["workers"][0]["replicas"] == 1
    delete_booster(cluster, "e2e", "immutable-replicas")


def test_pods_zero_is_defaulted_with_a_warning_the_client_sees(cluster: Cluster) -> None:
    document = load_example("single-vllm-cpu.yaml")
    document["metadata"].update(name="zero-pods", namespace="e2e")
    document["spec"]["backends"][0]["workers"][0]["pods"] = 0
    # A dry run goes through both webhooks (sideEffects: None) and stores nothing.
    path = "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/e2e/modelboosters?dryRun=All"
    answer, headers = raw_exchange(cluster.user, "POST", path, body=document)
    assert answer["spec"]["backends"][0]["workers"][0]["pods"] == 1
    warnings = [value for key, value in headers if key.lower() == "warning"]
    assert any("pods" in warning for warning in warnings), warnings
    assert get_booster(cluster, "e2e", "zero-pods") is None
