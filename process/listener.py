"""The plain-HTTP listener every process serves for Prometheus and the kubelet: `/metrics`, `/healthz`, `/readyz`.

A probe is a function that returns None when all is well and otherwise the reason it is not, which the
endpoint answers as text (500 for liveness, 503 for readiness) so `kubectl describe pod` shows why.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Probe = Callable[[], str | None]


def _always_ok() -> str | None:
    return None


def _text(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=f"{text}\n")


def make_listener_app(
    *, registry: CollectorRegistry, healthy: Probe = _always_ok, ready: Probe = _always_ok
) -> web.Application:
    async def healthz(_request: web.Request) -> web.Response:
        reason = healthy()
        return _text(200, "ok") if reason is None else _text(500, reason)

    async def readyz(_request: web.Request) -> web.Response:
        reason = ready()
        return _text(200, "ok") if reason is None else _text(503, reason)

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app
