"""HTTP-level behaviour over real HTTPS: bad input gets its status and a one-line reason, probes, TLS."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.webhook.conftest import SERVICE_DNS, ServerFactory, TlsFiles, Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import MUTATE_PATH, VALIDATE_PATH

PATHS = (MUTATE_PATH, VALIDATE_PATH)


async def _raw(webhook: Webhook, path: str, body: bytes, *, content_type: str = "application/json") -> tuple[int, str]:
    async with webhook.session.post(webhook.base + path, data=body, headers={"Content-Type": content_type}) as response:
        text = await response.text()
        if response.status != 200:
            # Every refusal is one line of plain text, and never a traceback.
            assert response.content_type == "text/plain"
            assert text.endswith("\n")
            assert "\n" not in text[:-1]
            assert "Traceback" not in text
        return response.status, text.rstrip("\n")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
async def test_only_post_is_allowed(webhook: Webhook, path: str, method: str) -> None:
    async with webhook.session.request(method, webhook.base + path) as response:
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
        assert await response.text() == f"method {method} is not allowed; use POST\n"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("content_type", "shown"),
    [
        ("text/plain", "text/plain"),
        ("application/yaml", "application/yaml"),
        ("application/json; charset=latin-1", "application/json; charset=latin-1"),
    ],
)
async def test_only_json_is_accepted(webhook: Webhook, path: str, content_type: str, shown: str) -> None:
    body = json.dumps(review(operation="CREATE", obj=single_vllm())).encode()
    assert await _raw(webhook, path, body, content_type=content_type) == (
        415,
        f"unsupported Content-Type '{shown}'; expected application/json",
    )


async def test_json_with_utf8_charset_is_accepted(webhook: Webhook) -> None:
    body = json.dumps(review(operation="DELETE", obj=None, old=single_vllm())).encode()
    status, _ = await _raw(webhook, VALIDATE_PATH, body, content_type="application/json; charset=utf-8")
    assert status == 200


async def test_body_over_the_limit_is_413(start_server: ServerFactory, session: aiohttp.ClientSession) -> None:
    server = await start_server(max_request_bytes=2048)
    webhook = Webhook(server=server, session=session)
    big = review(operation="CREATE", obj=single_vllm())
    big["request"]["object"]["metadata"]["annotations"] = {"note": "x" * 4096}
    assert await _raw(webhook, VALIDATE_PATH, json.dumps(big).encode()) == (
        413,
        "request body exceeds the limit of 2048 bytes",
    )


async def test_chunked_body_over_the_limit_is_413(start_server: ServerFactory, session: aiohttp.ClientSession) -> None:
    server = await start_server(max_request_bytes=2048)
    webhook = Webhook(server=server, session=session)

    async def chunks() -> AsyncIterator[bytes]:
        # No Content-Length: the limit must hold while reading, not only from the header.
        yield b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"x": "'
        for _ in range(8):
            yield b"y" * 1024
        yield b'"}}'

    async with session.post(
        webhook.base + VALIDATE_PATH, data=chunks(), headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status == 413
        assert await response.text() == "request body exceeds the limit of 2048 bytes\n"


def _bad_reviews() -> list[tuple[str, Any, str]]:
    good = review(operation="CREATE", obj=single_vllm())

    def edited(**request: Any) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(json.dumps(good))
        for key, value in request.items():
            if value is _DROP:
                del body["request"][key]
            else:
                body["request"][key] = value
        return body

    return [
        ("array body", [], "expected an AdmissionReview JSON object, got array"),
        ("string body", "hello", "expected an AdmissionReview JSON object, got str"),
        (
            "v1beta1 review",
            {**good, "apiVersion": "admission.k8s.io/v1beta1"},
            "unsupported AdmissionReview apiVersion 'admission.k8s.io/v1beta1'; expected 'admission.k8s.io/v1'",
        ),
        (
            "no apiVersion",
            {"kind": "AdmissionReview", "request": good["request"]},
            "unsupported AdmissionReview apiVersion None; expected 'admission.k8s.io/v1'",
        ),
        ("wrong kind", {**good, "kind": "Pod"}, "expected kind 'AdmissionReview', got 'Pod'"),
        (
            "no request",
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
            "AdmissionReview has no request",
        ),
        ("null request", {**good, "request": None}, "AdmissionReview has no request"),
        ("request not an object", {**good, "request": [1]}, "request must be a JSON object, got array"),
        ("no uid", edited(uid=_DROP), "request.uid must be a non-empty string"),
        ("empty uid", edited(uid=""), "request.uid must be a non-empty string"),
        ("numeric uid", edited(uid=7), "request.uid must be a non-empty string"),
        (
            "bad operation",
            edited(operation="PATCH"),
            "request.operation 'PATCH' is not one of CREATE, UPDATE, DELETE, CONNECT",
        ),
        ("create without object", edited(object=None), "request.object is required for CREATE"),
        ("object not an object", edited(object="qwen"), "request.object must be a JSON object, got str"),
        ("update without old", edited(operation="UPDATE", oldObject=None), "request.oldObject is required for UPDATE"),
        ("dryRun not boolean", edited(dryRun="yes"), "request.dryRun must be a boolean, got str"),
        ("namespace not a string", edited(namespace=3), "request.namespace must be a string, got int"),
    ]


_DROP = object()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("case", "body", "reason"), _bad_reviews(), ids=[case for case, _, _ in _bad_reviews()])
async def test_malformed_reviews_are_400(webhook: Webhook, path: str, case: str, body: Any, reason: str) -> None:
    assert await _raw(webhook, path, json.dumps(body).encode()) == (400, reason)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "malformed JSON: Expecting value: line 1 column 1 (char 0)"),
        (b"{", "malformed JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (b'{"a": NaN}', "malformed JSON: NaN is not valid JSON"),
        (b'{"a": Infinity}', "malformed JSON: Infinity is not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "malformed JSON: nested too deeply"),
        (b'{"a": "\xff"}', "malformed JSON: 'utf-8' codec can't decode byte 0xff in position 7: invalid start byte"),
    ],
)
async def test_malformed_json_is_400(webhook: Webhook, body: bytes, reason: str) -> None:
    assert await _raw(webhook, VALIDATE_PATH, body) == (400, reason)


async def test_unknown_path_is_404(webhook: Webhook) -> None:
    async with webhook.session.post(webhook.base + "/validate-registry-volcano-sh-v1alpha1-model", json={}) as response:
        assert response.status == 404


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
async def test_delete_and_connect_are_allowed_untouched(webhook: Webhook, path: str, operation: str) -> None:
    sent = review(operation=operation, obj=None, old=single_vllm())
    response = await webhook.admit(path, sent)
    assert response == {"uid": sent["request"]["uid"], "allowed": True}


@pytest.mark.parametrize("path", PATHS)
async def test_status_subresource_writes_are_allowed_untouched(webhook: Webhook, path: str) -> None:
    old = single_vllm()
    new = {**single_vllm(), "spec": {"backends": "not even a list"}, "status": {"observedGeneration": 1}}
    sent = review(operation="UPDATE", obj=new, old=old)
    sent["request"]["subResource"] = "status"
    response = await webhook.admit(path, sent)
    assert response == {"uid": sent["request"]["uid"], "allowed": True}


@pytest.mark.parametrize("path", PATHS)
async def test_another_kind_is_denied_with_a_reason(webhook: Webhook, path: str) -> None:
    sent = review(operation="CREATE", obj={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    sent["request"]["kind"] = {"group": "", "version": "v1", "kind": "Pod"}
    response = await webhook.admit(path, sent)
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert response["status"]["reason"] == "BadRequest"
    assert response["status"]["message"] == (
        "this webhook admits workload.serving.volcano.sh ModelBooster objects only, not core/v1 Pod"
    )


async def test_request_fields_are_not_echoed(webhook: Webhook) -> None:
    sent = review(operation="CREATE", obj=single_vllm())
    status, body = await webhook.post(VALIDATE_PATH, sent)
    assert status == 200
    assert set(body) == {"apiVersion", "kind", "response"}


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as response:
        return response.status, await response.text()


async def test_probes_on_both_ports(webhook: Webhook) -> None:
    for base in (webhook.base, webhook.metrics_base):
        assert await _get(webhook.session, base + "/healthz") == (200, "ok\n")
        assert await _get(webhook.session, base + "/readyz") == (200, "ok\n")


async def test_not_ready_until_a_certificate_appears(
    start_server: ServerFactory, session: aiohttp.ClientSession, tls: TlsFiles
) -> None:
    tls.cert_file.unlink()
    tls.key_file.unlink()
    server = await start_server()
    webhook = Webhook(server=server, session=session)
    assert await _get(session, webhook.metrics_base + "/readyz") == (
        503,
        f"no serving certificate loaded yet from {tls.cert_file}\n",
    )
    assert await _get(session, webhook.metrics_base + "/healthz") == (200, "ok\n")
    with pytest.raises(aiohttp.ClientConnectorError):
        await _get(session, webhook.base + "/healthz")
    tls.issue()
    for _ in range(500):
        if (await _get(session, webhook.metrics_base + "/readyz"))[0] == 200:
            break
        await asyncio.sleep(0.01)
    assert await _get(session, webhook.base + "/readyz") == (200, "ok\n")


async def test_the_service_dns_name_verifies_like_kube_apiserver_dials_it(webhook: Webhook) -> None:
    sent = review(operation="CREATE", obj=single_vllm())
    async with webhook.session.post(webhook.base + VALIDATE_PATH, json=sent, server_hostname=SERVICE_DNS) as response:
        assert response.status == 200


async def test_tls_13_minimum_refuses_tls_12_clients(start_server: ServerFactory, tls: TlsFiles) -> None:
    server = await start_server(tls_min_version="1.3")
    old = tls.client_context()
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=old)) as client:
        with pytest.raises(aiohttp.ClientConnectorError):
            await _get(client, f"https://127.0.0.1:{server.https_port}/healthz")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls.client_context())) as client:
        assert await _get(client, f"https://127.0.0.1:{server.https_port}/healthz") == (200, "ok\n")


async def test_plain_http_on_the_tls_port_is_refused(webhook: Webhook) -> None:
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(aiohttp.ClientError):
            await _get(plain, f"http://127.0.0.1:{webhook.server.https_port}/healthz")


@pytest.mark.parametrize("path", PATHS)
async def test_a_pathologically_deep_object_is_denied_not_an_error(webhook: Webhook, path: str) -> None:
    obj = single_vllm()
    obj["spec"]["backends"][0]["workers"][0]["config"] = "__DEEP__"
    depth = 700  # parses as JSON, but deeper than the recursion the defaulting and decoding can take
    body = json.dumps(review(operation="CREATE", obj=obj)).replace('"__DEEP__"', '{"a":' * depth + "1" + "}" * depth)
    status, text = await _raw(webhook, path, body.encode())
    assert status == 200
    response = json.loads(text)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
