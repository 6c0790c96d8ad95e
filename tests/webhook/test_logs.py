"""Structured logs carry the request uid and the object's namespace/name, never the object itself."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from process.logs import configure
from tests.webhook.conftest import Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import VALIDATE_PATH


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield stream
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    logging.getLogger("aiohttp.access").setLevel(logging.NOTSET)


def _entries(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


async def test_json_denial_log_has_the_context_and_no_payload(webhook: Webhook, captured: io.StringIO) -> None:
    configure(level="info", fmt="json", stream=captured)
    obj = single_vllm()
    obj["spec"]["rateLimit"] = {"tokensPerUnit": 1}
    sent = review(operation="CREATE", obj=obj, dry_run=True)
    await webhook.admit(VALIDATE_PATH, sent)
    denials = [entry for entry in _entries(captured) if str(entry["msg"]).startswith("denied: ")]
    assert len(denials) == 1
    entry = denials[0]
    assert entry["level"] == "info"
    assert entry["logger"] == "webhook.app"
    assert entry["uid"] == sent["request"]["uid"]
    assert (entry["namespace"], entry["name"]) == ("default", "qwen")
    assert (entry["operation"], entry["dry_run"], entry["allowed"], entry["code"]) == ("CREATE", True, False, 422)
    assert "vllm/vllm-openai" not in captured.getvalue()  # the object's content is not logged


async def test_a_huge_denial_is_logged_shortened(webhook: Webhook, captured: io.StringIO) -> None:
    configure(level="info", fmt="json", stream=captured)
    obj = single_vllm()
    backend = obj["spec"]["backends"][0]
    backend.update(rateLimit={"tokensPerUnit": 1}, topology={"mode": "hard"}, networkTopology={"tier": 1})
    # Ten backends with three refused features each: a long message, none of it quoting the object.
    obj["spec"]["backends"] = [{**backend, "name": f"b{index}"} for index in range(10)]
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=obj))
    full = response["status"]["message"]
    assert len(full) > 1000
    (entry,) = [entry for entry in _entries(captured) if str(entry["msg"]).startswith("denied: ")]
    logged = str(entry["msg"]).removeprefix("denied: ")
    assert logged == f"{full[:1000]}... ({len(full) - 1000} more characters)"


async def test_allowed_requests_are_logged_at_debug_only(webhook: Webhook, captured: io.StringIO) -> None:
    configure(level="info", fmt="json", stream=captured)
    await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=single_vllm()))
    assert not [entry for entry in _entries(captured) if entry["msg"] == "admitted"]
    configure(level="debug", fmt="json", stream=captured)
    sent = review(operation="CREATE", obj=single_vllm())
    await webhook.admit(VALIDATE_PATH, sent)
    admitted = [entry for entry in _entries(captured) if entry["msg"] == "admitted"]
    assert [entry["uid"] for entry in admitted] == [sent["request"]["uid"]]


async def test_text_format_appends_the_context(webhook: Webhook, captured: io.StringIO) -> None:
    configure(level="info", fmt="text", stream=captured)
    status, _ = await webhook.post(VALIDATE_PATH, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})
    assert status == 400
    line = next(line for line in captured.getvalue().splitlines() if "bad admission request" in line)
    assert " INFO webhook.app: bad admission request: AdmissionReview has no request" in line
    assert line.endswith(f"webhook={VALIDATE_PATH} code=400")


def test_exceptions_go_into_the_error_field(captured: io.StringIO) -> None:
    configure(level="info", fmt="json", stream=captured)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("webhook.test").exception("failed", extra={"context": {"uid": "u-1"}})
    (entry,) = _entries(captured)
    assert entry["msg"] == "failed"
    assert entry["uid"] == "u-1"
    assert "RuntimeError: boom" in str(entry["error"])
