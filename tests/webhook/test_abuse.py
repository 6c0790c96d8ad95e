"""Slow and hostile clients over real HTTPS: the webhook answers quickly, holds bounded memory, stays quiet.

Raw TLS connections let a client do what aiohttp's client will not: announce a body and stall, or hang
up halfway through it.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
import pytest

from tests.webhook.conftest import ServerFactory, TlsFiles, Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import MUTATE_PATH, VALIDATE_PATH
from webhook.main import WebhookServer

KiB = 1024
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
OVER_BUDGET = f"request bodies in memory would exceed the budget of {256 * KiB} bytes; retry later\n"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str


def _head(path: str, *, length: int | None) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{framing}\r\n\r\n".encode()


@asynccontextmanager
async def _connect(server: WebhookServer, tls: TlsFiles) -> AsyncIterator[Connection]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.https_port, ssl=tls.client_context())
    try:
        yield reader, writer
    finally:
        writer.transport.abort()


async def _answer(reader: asyncio.StreamReader) -> Answer:
    status = int((await reader.readline()).split()[1])
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Answer(status=status, headers=headers, text=body.decode())


async def _stall(connection: Connection, *, length: int, sent: int) -> None:
    """Announce `length` bytes of body and send only `sent` of them."""
    _, writer = connection
    writer.write(_head(VALIDATE_PATH, length=length) + b"x" * sent)
    await writer.drain()


async def _closed(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), timeout=3) == b""
    except (ConnectionError, TimeoutError):
        return True


def _dropped(server: WebhookServer, reason: str, path: str = VALIDATE_PATH) -> float:
    registry = server.state.metrics.registry
    labels = {"webhook": path, "reason": reason}
    return registry.get_sample_value("modelbooster_webhook_requests_dropped_total", labels) or 0.0


def _answered(server: WebhookServer, code: int, path: str = VALIDATE_PATH) -> float:
    registry = server.state.metrics.registry
    labels = {"webhook": path, "code": str(code)}
    return registry.get_sample_value("controller_runtime_webhook_requests_total", labels) or 0.0


def _buffered(server: WebhookServer) -> float:
    return server.state.metrics.registry.get_sample_value("modelbooster_webhook_buffered_bytes") or 0.0


async def _eventually(check: Callable[[], bool]) -> None:
    for _ in range(300):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def test_a_body_not_sent_in_time_is_answered_408_and_the_connection_closed(
    start_server: ServerFactory, tls: TlsFiles
) -> None:
    server = await start_server(request_read_timeout=0.3)
    async with _connect(server, tls) as connection:
        await _stall(connection, length=100 * KiB, sent=10 * KiB)
        answer = await asyncio.wait_for(_answer(connection[0]), timeout=3)
        assert answer.status == 408
        assert answer.text == f"request body not received within 0.3 s ({10 * KiB} of {100 * KiB} bytes)\n"
        assert answer.headers["connection"] == "close"
        assert await _closed(connection[0])
    assert _dropped(server, "read_timeout") == 1
    assert _answered(server, 408) == 1
    assert _buffered(server) == 0


async def test_the_deadline_covers_a_body_that_trickles_in(start_server: ServerFactory, tls: TlsFiles) -> None:
    server = await start_server(request_read_timeout=0.5)
    async with _connect(server, tls) as (reader, writer):
        writer.write(_head(VALIDATE_PATH, length=KiB))
        answered = asyncio.ensure_future(_answer(reader))
        for _ in range(40):  # a byte every 50 ms: always some progress, never done in time
            if answered.done():
                break
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.05)
        assert (await asyncio.wait_for(answered, timeout=3)).status == 408


async def test_a_body_that_does_not_fit_the_budget_is_429_before_it_is_sent(
    start_server: ServerFactory, tls: TlsFiles, session: aiohttp.ClientSession
) -> None:
    server = await start_server(max_request_bytes=200 * KiB, max_buffered_bytes=256 * KiB)
    async with _connect(server, tls) as holder:
        await _stall(holder, length=150 * KiB, sent=KiB)
        await _eventually(lambda: _buffered(server) == 150 * KiB)
        async with _connect(server, tls) as refused:
            # Headers only: the answer must not wait for a body.
            refused[1].write(_head(VALIDATE_PATH, length=100 * KiB))
            answer = await asyncio.wait_for(_answer(refused[0]), timeout=3)
            assert answer.status == 429
            assert answer.headers["retry-after"] == "1"
            assert answer.text == OVER_BUDGET
        # A small request still fits: large bodies may not take the last quarter of the budget.
        webhook = Webhook(server=server, session=session)
        allowed = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=single_vllm()))
        assert allowed["allowed"] is True
    assert _dropped(server, "body_budget") == 1
    await _eventually(lambda: _buffered(server) == 0)


def _chunked(body: bytes) -> bytes:
    return f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"


async def test_a_chunked_body_that_arrived_whole_is_bounded_too(start_server: ServerFactory, tls: TlsFiles) -> None:
    # Head and body in one write: the body is buffered whole before the handler runs, and taken as it is.
    server = await start_server(max_request_bytes=2048)
    valid = json.dumps(review(operation="CREATE", obj=single_vllm())).encode()
    async with _connect(server, tls) as (reader, writer):
        writer.write(_head(VALIDATE_PATH, length=None) + _chunked(valid))
        answer = await asyncio.wait_for(_answer(reader), timeout=3)
        assert answer.status == 200
        assert json.loads(answer.text)["response"]["allowed"] is True
        writer.write(_head(VALIDATE_PATH, length=None) + _chunked(b" " * 3000 + valid))
        answer = await asyncio.wait_for(_answer(reader), timeout=3)
        assert (answer.status, answer.text) == (413, "request body exceeds the limit of 2048 bytes\n")
    await _eventually(lambda: _buffered(server) == 0)


async def test_a_chunked_body_reserves_as_it_grows(
    start_server: ServerFactory, session: aiohttp.ClientSession
) -> None:
    server = await start_server(max_request_bytes=200 * KiB, max_buffered_bytes=256 * KiB)

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(199):
            yield b" " * KiB  # leading whitespace is valid JSON, so only the budget can stop it

    first = session.post(
        f"https://127.0.0.1:{server.https_port}{VALIDATE_PATH}",
        data=chunks(),
        headers={"Content-Type": "application/json"},
    )
    async with first as response:
        # Even alone, a large body may only take three quarters (192 KiB) of a 256 KiB budget.
        assert response.status == 429
        assert await response.text() == OVER_BUDGET
    assert _dropped(server, "body_budget") == 1
    await _eventually(lambda: _buffered(server) == 0)


async def test_requests_beyond_the_concurrency_bound_are_429_at_once(
    start_server: ServerFactory, tls: TlsFiles, session: aiohttp.ClientSession
) -> None:
    server = await start_server(max_requests_in_flight=2)
    webhook = Webhook(server=server, session=session)
    sent = review(operation="CREATE", obj=single_vllm())
    async with _connect(server, tls) as first, _connect(server, tls) as second:
        await _stall(first, length=KiB, sent=10)
        await _stall(second, length=KiB, sent=10)
        await webhook.wait_in_flight(VALIDATE_PATH, 2)
        status, text = await webhook.post(MUTATE_PATH, sent)
        assert (status, text) == (429, "2 admission requests are in flight already; retry later\n")
    await webhook.wait_in_flight(VALIDATE_PATH, 0)
    assert (await webhook.admit(VALIDATE_PATH, sent))["allowed"] is True
    assert _dropped(server, "too_many_in_flight", MUTATE_PATH) == 1
    assert _answered(server, 429, MUTATE_PATH) == 1


async def test_a_client_that_hangs_up_mid_body_is_counted_not_an_error(
    server: WebhookServer, tls: TlsFiles, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with _connect(server, tls) as connection:
        await _stall(connection, length=100 * KiB, sent=50 * KiB)
        await _eventually(lambda: _buffered(server) == 100 * KiB)
    await _eventually(lambda: _dropped(server, "client_disconnected") == 1)
    await asyncio.sleep(0.1)  # anything the server would still log about it
    assert [code for code in range(400, 600) if _answered(server, code)] == []
    assert [record for record in caplog.records if record.levelno >= logging.WARNING or record.exc_info] == []
    assert "client closed the connection before sending the whole request body" in caplog.messages
    assert _buffered(server) == 0


async def test_a_malformed_chunked_body_is_400_and_no_error_log(
    server: WebhookServer, tls: TlsFiles, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with _connect(server, tls) as (reader, writer):
        writer.write(_head(VALIDATE_PATH, length=None) + b"zz\r\n{}\r\n0\r\n\r\n")
        answer = await asyncio.wait_for(_answer(reader), timeout=3)
    assert answer.status == 400
    assert "Invalid character in chunk size" in answer.text
    assert [record for record in caplog.records if record.levelno >= logging.WARNING or record.exc_info] == []
    assert "Error handling request from 127.0.0.1: Invalid character in chunk size: b'zz' ^" in caplog.messages


def _with_config(config: object) -> bytes:
    obj = single_vllm()
    obj["spec"]["backends"][0]["workers"][0]["config"] = "__CONFIG__"
    return json.dumps(review(operation="CREATE", obj=obj)).replace('"__CONFIG__"', json.dumps(config)).encode()


def _nested(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


async def _both(webhook: Webhook, body: bytes) -> list[dict[str, object]]:
    answers = []
    for path in (MUTATE_PATH, VALIDATE_PATH):
        async with webhook.session.post(
            webhook.base + path, data=body, headers={"Content-Type": "application/json"}
        ) as response:
            assert response.status == 200
            answers.append((await response.json())["response"])
    return answers


@pytest.mark.parametrize("levels", [95, 300, 600])
async def test_too_deep_nesting_is_the_same_400_from_both_endpoints(webhook: Webhook, levels: int) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["workers"][0]["config"] = "__DEEP__"
    body = json.dumps(review(operation="CREATE", obj=obj)).replace('"__DEEP__"', _nested(levels)).encode()
    mutated, validated = await _both(webhook, body)
    assert mutated == validated
    status = validated["status"]
    assert isinstance(status, dict)
    assert (validated["allowed"], status["code"], status["reason"]) == (False, 400, "BadRequest")
    # config is the 7th level of the object (root, spec, backends, [0], workers, [0]): 94 more make 101.
    path = "spec.backends[0].workers[0].config" + ".a" * 94
    assert status["message"] == f"the object cannot be admitted: {path} is nested more than 100 levels deep"


async def test_nesting_just_within_the_bound_is_admitted(webhook: Webhook) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["workers"][0]["config"] = "__DEEP__"
    # config and 93 objects inside it: 100 levels in all.
    body = json.dumps(review(operation="CREATE", obj=obj)).replace('"__DEEP__"', _nested(94)).encode()
    mutated, validated = await _both(webhook, body)
    assert mutated["allowed"] is True
    assert validated["allowed"] is True


async def test_too_many_values_is_the_same_400_from_both_endpoints(webhook: Webhook) -> None:
    body = _with_config({"a": [0] * 50_001})
    mutated, validated = await _both(webhook, body)
    assert mutated == validated
    status = validated["status"]
    assert isinstance(status, dict)
    assert (status["code"], status["message"]) == (
        400,
        "the object cannot be admitted: it holds more than 50000 values; a ModelBooster needs a few thousand at most",
    )


async def test_an_old_object_beyond_the_bounds_does_not_block_fixing_it(webhook: Webhook) -> None:
    old = single_vllm()
    old["spec"]["backends"][0]["workers"][0]["replicas"] = 3
    old["spec"]["backends"][0]["workers"][0]["config"] = {"a": [0] * 50_001}
    new = single_vllm()  # replicas 1: a change the UPDATE rule refuses, but the old object cannot be trusted
    response = await webhook.admit(VALIDATE_PATH, review(operation="UPDATE", obj=new, old=old))
    assert response["allowed"] is True


async def test_a_review_with_ten_thousand_errors_gets_a_short_denial(webhook: Webhook) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["env"] = [{"name": f"VAR_{index}", "value": index} for index in range(10_000)]
    async with webhook.session.post(webhook.base + VALIDATE_PATH, json=review(operation="CREATE", obj=obj)) as reply:
        raw = await reply.read()
    response = json.loads(raw)["response"]
    assert len(raw) < 16 * KiB
    status = response["status"]
    causes = status["details"]["causes"]
    assert len(causes) == 21
    assert causes[0] == {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 0: must be of type string",
        "field": "spec.backends[0].env[0].value",
    }
    assert causes[-1] == {
        "reason": "FieldValueInvalid",
        "message": "and at least 980 more errors, not shown (validation stops after 1000)",
        "field": "spec.backends[0].env",
    }
    lines = status["message"].splitlines()
    assert len(lines) == 22
    assert lines[-1] == f"  - {causes[-1]['field']}: {causes[-1]['message']}"


async def test_memory_is_handed_back_after_large_bodies(webhook: Webhook) -> None:
    server = webhook.server
    trims = server.state.trimmer.trims
    body = json.dumps(review(operation="DELETE", obj=None, old=single_vllm())) + " " * (3 * 1024 * KiB - 4096)
    for _ in range(3):  # 9 MiB of bodies in all: past the 8 MiB after which the heap is trimmed
        async with webhook.session.post(
            webhook.base + VALIDATE_PATH, data=io.BytesIO(body.encode()), headers={"Content-Type": "application/json"}
        ) as response:
            assert response.status == 200
    await _eventually(lambda: server.state.trimmer.trims == trims + 1)
