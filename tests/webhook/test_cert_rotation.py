"""A certificate swapped on disk is served without a restart; requests in flight are not dropped."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator

import aiohttp
from cryptography.hazmat.primitives.serialization import Encoding
from prometheus_client.parser import text_string_to_metric_families

from tests.webhook.conftest import TlsFiles, Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import VALIDATE_PATH


async def _served_cert(port: int, context: ssl.SSLContext) -> bytes:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        return bytes(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
    finally:
        writer.close()
        await writer.wait_closed()


async def _wait_for_cert(port: int, context: ssl.SSLContext, der: bytes) -> None:
    for _ in range(300):
        if await _served_cert(port, context) == der:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the new certificate was never served")


def _reloads(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "modelbooster_webhook_certificate_reloads_total" and sample.labels == {
                "result": "loaded"
            }:
                return sample.value
    return 0.0


async def test_a_swapped_certificate_is_picked_up(webhook: Webhook, tls: TlsFiles) -> None:
    port = webhook.server.https_port
    context = tls.client_context()
    before = await _served_cert(port, context)
    fresh = tls.issue()
    await _wait_for_cert(port, context, fresh.cert.public_bytes(Encoding.DER))
    assert before != fresh.cert.public_bytes(Encoding.DER)
    # Admission keeps working on the new certificate, and the reload was counted.
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=single_vllm()))
    assert response["allowed"] is True
    assert _reloads(await webhook.metrics()) == 2


async def test_a_request_in_flight_during_the_swap_completes(webhook: Webhook, tls: TlsFiles) -> None:
    body = json.dumps(review(operation="CREATE", obj=single_vllm())).encode()
    half = len(body) // 2
    resume = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield body[:half]
        await resume.wait()
        yield body[half:]

    async def send() -> tuple[int, bytes]:
        async with webhook.session.post(
            webhook.base + VALIDATE_PATH, data=slow_body(), headers={"Content-Type": "application/json"}
        ) as response:
            return response.status, await response.read()

    request = asyncio.create_task(send())
    await webhook.wait_in_flight(VALIDATE_PATH, 1)
    fresh = tls.issue()
    await _wait_for_cert(webhook.server.https_port, tls.client_context(), fresh.cert.public_bytes(Encoding.DER))
    resume.set()
    status, answer = await request
    assert status == 200
    assert json.loads(answer)["response"]["allowed"] is True


async def test_a_broken_pair_on_disk_keeps_the_old_certificate(webhook: Webhook, tls: TlsFiles) -> None:
    port = webhook.server.https_port
    context = tls.client_context()
    before = await _served_cert(port, context)
    tls.key_file.write_bytes(tls.ca.key_pem)  # a key that does not belong to tls.crt
    await asyncio.sleep(0.2)  # ten check intervals
    assert await _served_cert(port, context) == before
    async with webhook.session.get(webhook.metrics_base + "/readyz") as response:
        assert response.status == 200


async def test_a_certificate_from_an_untrusted_ca_fails_verification(webhook: Webhook, tls: TlsFiles) -> None:
    from certs.authority import create_ca

    stranger = create_ca()
    fresh = tls.issue(ca=stranger)
    # Watch what is served without verifying: it changes from a trusted to an untrusted certificate.
    observer = ssl.create_default_context()
    observer.check_hostname = False
    observer.verify_mode = ssl.CERT_NONE
    await _wait_for_cert(webhook.server.https_port, observer, fresh.cert.public_bytes(Encoding.DER))
    # A client that trusts only the old CA (an API server with a stale caBundle) now refuses.
    connector = aiohttp.TCPConnector(ssl=tls.client_context())
    async with aiohttp.ClientSession(connector=connector) as client:
        try:
            async with client.get(webhook.base + "/healthz"):
                raise AssertionError("a certificate from an untrusted CA was accepted")
        except aiohttp.ClientConnectorCertificateError:
            pass
