"""The optimizer REST application: the routes of its mode (stateless serves the reads and `/optimizeOne`,
stateful also the edits and `/optimize`), bad requests answered with their reason, every answer counted, and
`/healthz`, `/readyz`, `/metrics`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from optimizer.rest import handlers as h
from optimizer.rest import replies
from optimizer.rest.metrics import OptimizerMetrics
from optimizer.rest.state import STATE, OptimizerState, state_of

MAX_BODY_BYTES: Final = 64 * 1024 * 1024  # a 10,000-server system is a few MB of JSON

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _errors_and_metrics(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE]
    route = request.match_info.route.resource
    route_name = route.canonical if route is not None else "unmatched"
    try:
        response = await handler(request)
    except replies.BadRequest as error:
        response = replies.message(400, error.message)
    except web.HTTPException as error:
        state.metrics.requests.labels(request.method, route_name, str(error.status)).inc()
        raise
    state.metrics.requests.labels(request.method, route_name, str(response.status)).inc()
    return response


async def healthz(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def metrics_endpoint(request: web.Request) -> web.Response:
    body = generate_latest(state_of(request).metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


_READ_ROUTES: Final[list[tuple[str, str, Handler]]] = [
    ("GET", "/getAccelerators", h.ACCELERATORS.get_all),
    ("GET", "/getAccelerator/{name}", h.ACCELERATORS.get_one),
    ("GET", "/getCapacities", h.get_capacities),
    ("GET", "/getCapacity/{type}", h.get_capacity),
    ("GET", "/getModels", h.get_models),
    ("GET", "/getModel/{name}", h.get_model),
    ("GET", "/getServiceClasses", h.get_service_classes),
    ("GET", "/getServiceClass/{name}", h.get_service_class),
    ("GET", "/getServiceClassModelTarget/{name}/{model}", h.get_service_class_target),
    ("GET", "/getServers", h.SERVERS.get_all),
    ("GET", "/getServer/{name}", h.SERVERS.get_one),
    ("GET", "/getModelAcceleratorPerf/{name}/{acc}", h.get_model_perf),
    ("POST", "/optimizeOne", h.optimize_one),
]

_STATEFUL_ROUTES: Final[list[tuple[str, str, Handler]]] = [
    ("POST", "/setAccelerators", h.ACCELERATORS.set_all),
    ("POST", "/addAccelerator", h.ACCELERATORS.add),
    ("GET", "/removeAccelerator/{name}", h.ACCELERATORS.remove),
    ("POST", "/setCapacities", h.set_capacities),
    ("POST", "/setCapacity", h.set_capacity),
    ("GET", "/removeCapacity/{type}", h.remove_capacity),
    ("POST", "/setModels", h.set_models),
    ("GET", "/addModel/{name}", h.add_model),
    ("GET", "/removeModel/{name}", h.remove_model),
    ("POST", "/addModelAcceleratorPerf", h.add_model_perf),
    ("GET", "/removeModelAcceleratorPerf/{name}/{acc}", h.remove_model_perf),
    ("POST", "/setServiceClasses", h.set_service_classes),
    ("GET", "/addServiceClass/{name}/{priority}", h.add_service_class),
    ("POST", "/addServiceClassModelTargets", h.add_service_class_targets),
    ("POST", "/addServiceClassModelTarget", h.add_service_class_target),
    ("GET", "/removeServiceClassModelTarget/{name}/{model}", h.remove_service_class_target),
    ("POST", "/setServers", h.SERVERS.set_all),
    ("POST", "/addServer", h.SERVERS.add),
    ("GET", "/removeServer/{name}", h.SERVERS.remove),
    ("POST", "/optimize", h.optimize_held),
    ("GET", "/applyAllocation", h.apply_allocation),
]


def make_app(*, stateful: bool = False, registry: CollectorRegistry | None = None) -> web.Application:
    """The optimizer REST application; stateless serves only the read routes and /optimizeOne."""
    app = web.Application(middlewares=[_errors_and_metrics], client_max_size=MAX_BODY_BYTES)
    app[STATE] = OptimizerState(stateful=stateful, metrics=OptimizerMetrics(registry or CollectorRegistry()))
    routes = _READ_ROUTES + (_STATEFUL_ROUTES if stateful else [])
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", healthz)
    app.router.add_get("/metrics", metrics_endpoint)
    return app
