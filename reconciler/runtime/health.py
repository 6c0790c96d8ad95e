"""Plain-HTTP endpoints of the reconciler: `/healthz` (liveness), `/readyz` (readiness), `/metrics`.

- `/healthz` answers 200 while the event loop runs and every informer loop is alive (an informer loop only
  ends by crashing; watch errors are retried inside it). A hung loop cannot answer at all, which is the point.
- `/readyz` answers 200 once every informer has listed its kind (caches synced) and until shutdown begins.
  A standby replica (not the leader) is ready too: it serves metrics and takes over at once when elected.
- `/metrics` is the Prometheus text format of the manager's registry.
"""

from __future__ import annotations

from aiohttp import web

from process.listener import make_listener_app
from reconciler.runtime.manager import Manager


def make_app(manager: Manager) -> web.Application:
    def healthy() -> str | None:
        return None if manager.healthy() else "an informer loop has stopped"

    def ready() -> str | None:
        if manager.ready():
            return None
        pending = sorted(informer.name for informer in manager.informers if not informer.has_synced)
        return f"caches not synced: {', '.join(pending)}" if pending else "shutting down"

    return make_listener_app(registry=manager.metrics.registry, healthy=healthy, ready=ready)
