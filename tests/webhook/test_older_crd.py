"""An older served ModelBooster CRD prunes what this version knows before the webhook sees it; when kubectl's
last-applied-configuration shows what was sent, the webhook says so (webhook/pruned.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from shared.backend_shape import NEITHER_DETAIL
from tests.webhook.conftest import Webhook
from tests.webhook.objects import deep
from tests.webhook.reviews import as_stored, review
from webhook.app import MUTATE_PATH
from webhook.pruned import LAST_APPLIED

ROOT = Path(__file__).resolve().parents[2]
OLDER_CRD = (
    "the API server dropped spec.backend (kubectl's last-applied-configuration holds it): the served ModelBooster "
    "CRD is older than this webhook and does not declare it; apply this release's CRDs: "
    "kubectl apply --server-side --force-conflicts -f charts/modelbooster/crds/"
)


def _applied_single_backend() -> tuple[dict[str, Any], dict[str, Any]]:
    """(what `kubectl apply` sent, what reaches the webhook once a CRD without `spec.backend` pruned it)."""
    sent: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "single-backend-kthena-v1.yaml").read_text())
    sent["metadata"].setdefault("namespace", "default")
    annotated = deep(sent)
    annotated["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(sent)}
    received = as_stored(annotated)
    del received["spec"]["backend"]
    return sent, received


async def test_an_object_left_without_a_backend_by_an_older_crd_is_refused_with_the_reason(webhook: Webhook) -> None:
    _, received = _applied_single_backend()
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=received))
    assert response["allowed"] is False
    status = response["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    (cause,) = status["details"]["causes"]
    assert cause["field"] == "spec"
    assert cause["message"].startswith(f"Required value: {NEITHER_DETAIL}")
    assert cause["message"].endswith(OLDER_CRD)


async def test_without_the_annotation_nothing_can_be_told(webhook: Webhook) -> None:
    _, received = _applied_single_backend()
    del received["metadata"]["annotations"]
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=received))
    # Left to the CRD's own validation (and the validating webhook), as before.
    assert response["allowed"] is True


async def test_another_pruned_field_is_a_warning(webhook: Webhook) -> None:
    sent, received = _applied_single_backend()
    received["spec"]["backend"] = deep(sent["spec"]["backend"])
    del received["spec"]["backend"]["replicas"]
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=received))
    assert response["allowed"] is True
    assert response["warnings"][0] == OLDER_CRD.replace("spec.backend ", "spec.backend.replicas ")


async def test_fields_unknown_to_this_version_too_are_not_blamed_on_the_crd(webhook: Webhook) -> None:
    sent, received = _applied_single_backend()
    sent["spec"]["noSuchField"] = 1
    received["spec"]["backend"] = deep(sent["spec"]["backend"])
    received["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(sent)}
    response = await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=received))
    assert response["allowed"] is True
    assert not any("dropped" in warning for warning in response.get("warnings", []))
