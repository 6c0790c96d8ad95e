"""Plain-HTTP endpoints of the reconciler: `/healthz` (liveness), `/readyz` (readiness), `/metrics`.

- `/healthz` answers 200 while the event loop runs and every informer loop is alive (an informer loop only
  ends by crashing; watch errors are retried inside it). A hung loop cannot answer at all, which is the point.
- `/readyz` answers 200 once every informer has listed its kind (caches synced) and until shutdown begins.
  A standby replica (not the leader) is ready too: it serves metrics and takes over at once when elected.
- `/metrics` is the Prometheus text format of the manager's registry.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from reconciler.manager import Manager

MANAGER_KEY = web.AppKey("manager", Manager)


async def _healthz(request: web.Request) -> web.Response:
    manager = request.app[MANAGER_KEY]
    if not manager.healthy():
        return web.Response(status=500, text="an informer loop has stopped\n")
    return web.Response(text="ok\n")


async def _readyz(request: web.Request) -> web.Response:
    manager = request.app[MANAGER_KEY]
    if manager.ready():
        return web.Response(text="ok\n")
    pending = sorted(informer.name for informer in manager.informers if not informer.has_synced)
    detail = f"caches not synced: {', '.join(pending)}" if pending else "shutting down"
    return web.Response(status=503, text=f"{detail}\n")


async def _metrics(request: web.Request) -> web.Response:
    manager = request.app[MANAGER_KEY]
    body = generate_latest(manager.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def make_app(manager: Manager) -> web.Application:
    app = web.Application()
    app[MANAGER_KEY] = manager
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    return app
