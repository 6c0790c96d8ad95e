"""A `metadata` that is not an object (a string, a list, a number) gets an admission answer from both endpoints —
allowed, or a clean 422 denial naming metadata — never a 500 with a traceback (webhook/pruned.py reads the
annotations of such metadata as none; `Webhook.admit` insists on HTTP 200 and an AdmissionReview)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.webhook.conftest import Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import MUTATE_PATH, VALIDATE_PATH


@pytest.mark.parametrize("metadata", ["x", [1], 5])
@pytest.mark.parametrize("path", [MUTATE_PATH, VALIDATE_PATH])
async def test_non_object_metadata_is_answered_not_crashed_on(webhook: Webhook, path: str, metadata: Any) -> None:
    for operation in ("CREATE", "UPDATE"):
        old = single_vllm() if operation == "UPDATE" else None
        request = review(operation=operation, obj=single_vllm(), old=old)
        request["request"]["object"]["metadata"] = metadata  # as a client could send it
        response = await webhook.admit(path, request)
        if response["allowed"]:
            continue  # mutation leaves what it cannot default to validation
        status = response["status"]
        assert (status["code"], status["reason"]) == (422, "Invalid")
        assert "metadata" in status["message"]
        assert "Traceback" not in status["message"]
