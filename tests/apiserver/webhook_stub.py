"""A scriptable admission webhook over HTTPS, run on its own thread, for the fake's admission tests."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.fakeapi.tls import TestCertificates, make_certificates

Review = dict[str, Any]
Responder = Callable[[Review], dict[str, Any] | None]


def allow(request: Review) -> dict[str, Any]:
    return {"uid": request["uid"], "allowed": True}


def patch_response(request: Review, operations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "uid": request["uid"],
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(operations).encode()).decode(),
    }


class WebhookStub:
    """Serves `/<path>` with a responder per path; records every AdmissionReview request it gets."""

    def __init__(self, service_dns: str = "stub.webhooks.svc") -> None:
        self.certificates: TestCertificates = make_certificates([service_dns, "127.0.0.1", "localhost"])
        self.responders: dict[str, Responder] = {}
        self.received: list[tuple[str, Review]] = []
        self.delay = 0.0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.certificates.ca_pem).decode()

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        path = request.path
        self.received.append((path, review["request"]))
        if self.delay:
            await asyncio.sleep(self.delay)
        responder = self.responders.get(path, allow)
        response = responder(review["request"])
        if response is None:
            return web.Response(status=500, text="stub failure")
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})

    def start(self) -> None:
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop

            async def serve() -> None:
                app = web.Application()
                app.router.add_post("/{tail:.*}", self._handle)
                self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
                await self._runner.setup()
                site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.certificates.server_context())
                await site.start()
                sockets = getattr(site._server, "sockets", None) or []
                self.port = int(sockets[0].getsockname()[1])

            loop.run_until_complete(serve())
            ready.set()
            try:
                loop.run_forever()
            finally:
                if self._runner is not None:
                    loop.run_until_complete(self._runner.cleanup())
                # TLS transports finish closing on the next loop iterations.
                loop.run_until_complete(asyncio.sleep(0.05))
                loop.close()

        self._thread = threading.Thread(target=main, daemon=True, name="webhook-stub")
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


def webhook_configuration(
    kind: str,
    name: str,
    *,
    path: str,
    ca_bundle: str,
    rules: list[dict[str, Any]],
    failure_policy: str = "Fail",
    timeout_seconds: int | None = None,
    url: str | None = None,
    namespace_selector: dict[str, Any] | None = None,
    object_selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    client_config: dict[str, Any] = {"caBundle": ca_bundle}
    if url:
        client_config["url"] = url
    else:
        client_config["service"] = {"namespace": "webhooks", "name": "stub", "path": path, "port": 443}
    webhook: dict[str, Any] = {
        "name": name,
        "clientConfig": client_config,
        "rules": rules,
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    if timeout_seconds is not None:
        webhook["timeoutSeconds"] = timeout_seconds
    if namespace_selector is not None:
        webhook["namespaceSelector"] = namespace_selector
    if object_selector is not None:
        webhook["objectSelector"] = object_selector
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name.split(".", maxsplit=1)[0]},
        "webhooks": [webhook],
    }
