"""A real webhook process surface for tests: HTTPS on 127.0.0.1 with a certificate made by `certs/`."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from certs.authority import KeyPair, create_ca, issue_serving_cert
from webhook.main import WebhookServer
from webhook.settings import Settings

SERVICE, NAMESPACE = "modelbooster-webhook", "kthena-system"
SERVICE_DNS = f"{SERVICE}.{NAMESPACE}.svc"


@dataclass
class TlsFiles:
    ca: KeyPair
    cert_file: Path
    key_file: Path

    def issue(self, *, ca: KeyPair | None = None) -> KeyPair:
        """Write a fresh serving pair (from `ca`, default the fixture's CA) over the files."""
        pair = issue_serving_cert(
            ca=ca or self.ca, service=SERVICE, namespace=NAMESPACE, extra_sans=["127.0.0.1", "localhost"]
        )
        self.cert_file.write_bytes(pair.cert_pem)
        self.key_file.write_bytes(pair.key_pem)
        return pair

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca.cert_pem.decode())


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    files = TlsFiles(ca=create_ca(), cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key")
    files.issue()
    return files


@pytest.fixture
def settings(tls: TlsFiles) -> Settings:
    return Settings(
        bind_address="127.0.0.1",
        port=0,
        metrics_bind_address="127.0.0.1",
        metrics_port=0,
        tls_cert_file=tls.cert_file,
        tls_private_key_file=tls.key_file,
        cert_check_interval=0.02,
        shutdown_timeout=5.0,
    )


ServerFactory = Callable[..., Awaitable[WebhookServer]]


@pytest.fixture
async def start_server(settings: Settings) -> AsyncIterator[ServerFactory]:
    """Start a WebhookServer with the test settings, optionally overridden; stopped at teardown."""
    started: list[WebhookServer] = []

    async def start(**overrides: Any) -> WebhookServer:
        server = WebhookServer(replace(settings, **overrides))
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        if not server.state.shutting_down:
            await server.stop()


@pytest.fixture
async def server(start_server: ServerFactory) -> WebhookServer:
    return await start_server()


@pytest.fixture
async def session(tls: TlsFiles) -> AsyncIterator[aiohttp.ClientSession]:
    """A client that trusts only the test CA and verifies the server's name, like kube-apiserver."""
    connector = aiohttp.TCPConnector(ssl=tls.client_context(), force_close=True)
    async with aiohttp.ClientSession(connector=connector) as client:
        yield client


@dataclass
class Webhook:
    """Posts to one running webhook over HTTPS and reads its plain-HTTP side."""

    server: WebhookServer
    session: aiohttp.ClientSession

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.server.https_port}"

    @property
    def metrics_base(self) -> str:
        return f"http://127.0.0.1:{self.server.metrics_port}"

    async def post(self, path: str, body: object) -> tuple[int, Any]:
        async with self.session.post(self.base + path, json=body) as response:
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()

    async def admit(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        """Post a review; it must come back as HTTP 200 with an AdmissionReview; return its response."""
        status, body = await self.post(path, review)
        assert status == 200, body
        assert body["apiVersion"] == "admission.k8s.io/v1"
        assert body["kind"] == "AdmissionReview"
        assert body["response"]["uid"] == review["request"]["uid"]
        response: dict[str, Any] = body["response"]
        return response

    async def wait_in_flight(self, path: str, count: int) -> None:
        """Wait until the server counts `count` requests in flight on `path`."""
        registry = self.server.state.metrics.registry
        labels = {"webhook": path}
        for _ in range(500):
            if registry.get_sample_value("controller_runtime_webhook_requests_in_flight", labels) == count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"never {count} request(s) in flight on {path}")

    async def metrics(self) -> str:
        async with self.session.get(self.metrics_base + "/metrics") as response:
            assert response.status == 200
            return await response.text()


@pytest.fixture
def webhook(server: WebhookServer, session: aiohttp.ClientSession) -> Webhook:
    return Webhook(server=server, session=session)
