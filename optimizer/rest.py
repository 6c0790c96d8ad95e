"""`modelbooster optimizer`: the Inferno optimizer as a REST server (docs/design/inferno.md §10), on aiohttp.

Same paths and JSON as the reference optimizer (legacy generation, v0.4/v0.5), so either side can be
swapped. Stateless (default) serves the read endpoints and `POST /optimizeOne`; stateful (`-F`) also keeps
a system that clients edit piece by piece and optimise with `POST /optimize`.

Where we differ, on purpose:
- bad input gets 400 with `{"message": reason}` (the reference answered 400 with an empty body), including
  references to unknown classes, models or accelerators (the reference silently dropped those servers);
- `POST /optimizeOne` in stateful mode optimises the posted system without wiping the held one;
- the singular `POST /addServiceClassModelTarget` (optimizer <= v0.3, still called by the reference
  controller) is served next to the plural one;
- `/metrics`, `/healthz` and `/readyz` exist.
Optimisation errors keep the reference's `404 {"message": "optimization error: ..."}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Generic, TypeVar

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from pydantic import BaseModel, ValidationError

from optimizer import wire
from optimizer.milp import MilpError, MilpUnavailableError
from optimizer.optimize import InvalidSystemError, Solution, optimize
from optimizer.system import Allocation, OptimizerFlags, ServiceClass, System
from process.flags import port as port_number
from process.flags import typed
from process.logs import configure
from shared.api.inferno import HIGHEST_PRIORITY, LOWEST_PRIORITY
from shared.errors import pydantic_detail_message

logger = logging.getLogger(__name__)

DEFAULT_PORT: Final = 8080
MAX_BODY_BYTES: Final = 64 * 1024 * 1024  # a 10,000-server system is a few MB of JSON

_Model = TypeVar("_Model", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Counter(
            "inferno_optimizer_http_requests",
            "HTTP requests by route and status code",
            ["method", "route", "code"],
            registry=registry,
        )
        self.runs = Counter("inferno_optimizer_runs", "optimisation runs by result", ["result"], registry=registry)
        self.run_seconds = Histogram(
            "inferno_optimizer_run_duration_seconds",
            "time to size and solve one system",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=registry,
        )
        self.servers = Gauge(
            "inferno_optimizer_last_run_servers", "servers in the last run", ["state"], registry=registry
        )
        self.cost = Gauge("inferno_optimizer_last_run_cost", "total cost of the last run, cents/h", registry=registry)


@dataclass
class OptimizerState:
    stateful: bool
    metrics: _Metrics
    system: System = field(default_factory=System)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


STATE: Final = web.AppKey("inferno_optimizer_state", OptimizerState)


class _BadRequest(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- plumbing --------------------------------------------------------------------------------------------


def _go_numbers(value: Any) -> Any:
    """Integral floats as integers (46, not 46.0), as Go prints its float32s."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _go_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_go_numbers(item) for item in value]
    return value


def _reply(data: Any, *, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(_go_numbers(data), indent=4), status=status, content_type="application/json")


def _message(status: int, message: str) -> web.Response:
    return _reply({"message": message}, status=status)


async def _body(request: web.Request, model: type[_Model]) -> _Model:
    raw = await request.read()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _BadRequest(f"body is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise _BadRequest(f"body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise _BadRequest(_validation_message(error)) from None


def _validation_message(error: ValidationError) -> str:
    parts = []
    for detail in error.errors():
        path = ".".join(str(part) for part in detail["loc"]) or "body"
        parts.append(f"{path}: {pydantic_detail_message(detail)}")
    return "; ".join(parts)


@web.middleware
async def _errors_and_metrics(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE]
    route = request.match_info.route.resource
    route_name = route.canonical if route is not None else "unmatched"
    try:
        response = await handler(request)
    except _BadRequest as error:
        response = _message(400, error.message)
    except web.HTTPException as error:
        state.metrics.requests.labels(request.method, route_name, str(error.status)).inc()
        raise
    state.metrics.requests.labels(request.method, route_name, str(response.status)).inc()
    return response


def _state(request: web.Request) -> OptimizerState:
    return request.app[STATE]


# --- accelerators ----------------------------------------------------------------------------------------


_Item = TypeVar("_Item")
_Named = TypeVar("_Named", wire.WireAccelerator, wire.WireServer)


@dataclass(frozen=True)
class _NamedCollection(Generic[_Item, _Named]):
    """A named collection of the held system with the reference's five endpoints (set, list, get, add,
    remove); accelerators and servers are served by the same code."""

    noun: str
    single: type[_Named]
    bulk: type[BaseModel]
    bulk_items: Callable[[Any], list[_Named]]
    items: Callable[[System], dict[str, _Item]]
    to_wire: Callable[[_Item], dict[str, Any]]
    from_wire: Callable[[_Named], _Item]
    listing: Callable[[list[dict[str, Any]]], Any]

    async def set_all(self, request: web.Request) -> web.Response:
        body: Any = await _body(request, self.bulk)  # a wire model: it has dump()
        state = _state(request)
        async with state.lock:
            for entry in self.bulk_items(body):
                self.items(state.system)[entry.name] = self.from_wire(entry)
        return _reply(body.dump())

    async def get_all(self, request: web.Request) -> web.Response:
        return _reply(self.listing([self.to_wire(item) for item in self.items(_state(request).system).values()]))

    async def get_one(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        item = self.items(_state(request).system).get(name)
        if item is None:
            return _message(404, f"{self.noun} {name} not found")
        return _reply(self.to_wire(item))

    async def add(self, request: web.Request) -> web.Response:
        body = await _body(request, self.single)
        state = _state(request)
        async with state.lock:
            self.items(state.system)[body.name] = self.from_wire(body)
        return _reply(body.dump())

    async def remove(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        state = _state(request)
        async with state.lock:
            item = self.items(state.system).pop(name, None)
        if item is None:
            return _message(404, f"{self.noun} {name} not found")
        return _reply(self.to_wire(item))


ACCELERATORS: Final = _NamedCollection(
    noun="accelerator",
    single=wire.WireAccelerator,
    bulk=wire.WireAcceleratorData,
    bulk_items=lambda body: list(body.accelerators),
    items=lambda system: system.accelerators,
    to_wire=wire.accelerator_to_wire,
    from_wire=wire.accelerator_from_wire,
    listing=lambda entries: entries,
)
SERVERS: Final = _NamedCollection(
    noun="server",
    single=wire.WireServer,
    bulk=wire.WireServerData,
    bulk_items=lambda body: list(body.servers),
    items=lambda system: system.servers,
    to_wire=wire.server_to_wire,
    from_wire=wire.server_from_wire,
    listing=lambda entries: {"servers": entries},
)


# --- capacity --------------------------------------------------------------------------------------------


async def set_capacities(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireCapacityData)
    state = _state(request)
    async with state.lock:
        for count in body.count:
            state.system.capacity[count.type] = count.count
    return _reply(body.dump())


async def get_capacities(request: web.Request) -> web.Response:
    return _reply(wire.capacity_to_wire(_state(request).system.capacity))


async def get_capacity(request: web.Request) -> web.Response:
    acc_type = request.match_info["type"]
    count = _state(request).system.capacity.get(acc_type)
    if count is None:
        return _message(404, f"capacity for accelerator type {acc_type} not found")
    return _reply({"type": acc_type, "count": count})


async def set_capacity(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireCount)
    state = _state(request)
    async with state.lock:
        state.system.capacity[body.type] = body.count
    return _reply(body.dump())


async def remove_capacity(request: web.Request) -> web.Response:
    acc_type = request.match_info["type"]
    state = _state(request)
    async with state.lock:
        count = state.system.capacity.pop(acc_type, None)
    if count is None:
        return _message(404, f"capacity for accelerator type {acc_type} not found")
    return _reply({"type": acc_type, "count": count})


# --- models ----------------------------------------------------------------------------------------------


async def set_models(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireModelData)
    state = _state(request)
    async with state.lock:
        for perf in body.models:
            state.system.models.setdefault(perf.name, {})[perf.acc] = wire.perf_from_wire(perf)
    return _reply(body.dump())


async def get_models(request: web.Request) -> web.Response:
    return _reply(list(_state(request).system.models))


async def get_model(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    perf = _state(request).system.models.get(name)
    if perf is None:
        return _message(404, f"model {name} not found")
    return _reply({"models": [wire.perf_to_wire(p) for p in perf.values()]})


async def add_model(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    state = _state(request)
    async with state.lock:
        state.system.models[name] = {}  # replaces: an existing model loses its perf data (reference behaviour)
    return _reply(name)


async def remove_model(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    state = _state(request)
    async with state.lock:
        removed = state.system.models.pop(name, None)
    if removed is None:
        return _message(404, f"model {name} not found")
    return _reply(name)


async def get_model_perf(request: web.Request) -> web.Response:
    name, acc = request.match_info["name"], request.match_info["acc"]
    perf = _state(request).system.perf(name, acc)
    if perf is None:
        return _message(404, f"model {name} has no data for accelerator {acc}")
    return _reply(wire.perf_to_wire(perf))


async def add_model_perf(request: web.Request) -> web.Response:
    body = await _body(request, wire.WirePerf)
    state = _state(request)
    async with state.lock:
        perf = state.system.models.get(body.name)
        if perf is None:
            return _message(404, f"model {body.name} not found")
        perf[body.acc] = wire.perf_from_wire(body)
    return _reply(body.dump())


async def remove_model_perf(request: web.Request) -> web.Response:
    name, acc = request.match_info["name"], request.match_info["acc"]
    state = _state(request)
    async with state.lock:
        removed = state.system.models.get(name, {}).pop(acc, None)
    if removed is None:
        return _message(404, f"model {name} has no data for accelerator {acc}")
    return _reply(wire.perf_to_wire(removed))


# --- service classes -------------------------------------------------------------------------------------


async def set_service_classes(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireServiceClassData)
    state = _state(request)
    async with state.lock:
        for service_class in body.service_classes:
            state.system.service_classes[service_class.name] = wire.service_class_from_wire(service_class)
    return _reply(body.dump())


async def get_service_classes(request: web.Request) -> web.Response:
    classes = _state(request).system.service_classes.values()
    return _reply({"serviceClasses": [wire.service_class_to_wire(c) for c in classes]})


async def get_service_class(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    service_class = _state(request).system.service_classes.get(name)
    if service_class is None:
        return _message(404, f"service class {name} not found")
    return _reply(wire.service_class_to_wire(service_class))


async def add_service_class(request: web.Request) -> web.Response:
    name, text = request.match_info["name"], request.match_info["priority"]
    try:
        priority = int(text)
    except ValueError:
        return _message(400, f"priority {text!r} is not an integer")
    if not HIGHEST_PRIORITY <= priority <= LOWEST_PRIORITY:
        return _message(400, f"priority {priority} is outside {HIGHEST_PRIORITY}..{LOWEST_PRIORITY}")
    service_class = ServiceClass(name=name, priority=priority)
    state = _state(request)
    async with state.lock:
        state.system.service_classes[name] = service_class
    return _reply(wire.service_class_to_wire(service_class))


async def add_service_class_targets(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireServiceClass)
    targets = [wire.target_from_wire(t) for t in body.model_targets]
    return await _add_targets(request, name=body.name, priority=body.priority, targets=targets)


async def add_service_class_target(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireFlatTarget)
    return await _add_targets(request, name=body.name, priority=body.priority, targets=[wire.target_from_wire(body)])


async def _add_targets(request: web.Request, *, name: str, priority: int, targets: list[Any]) -> web.Response:
    state = _state(request)
    async with state.lock:
        service_class = state.system.service_classes.get(name)
        if service_class is None:
            return _reply(f"service class {name} not found", status=404)
        if priority != service_class.priority:
            return _message(
                400, f"priority {priority} does not match service class {name}'s priority {service_class.priority}"
            )
        by_model = {t.model: t for t in service_class.targets}
        by_model.update({t.model: t for t in targets})
        updated = replace(service_class, targets=tuple(by_model.values()))
        state.system.service_classes[name] = updated
    return _reply(wire.service_class_to_wire(updated))


async def get_service_class_target(request: web.Request) -> web.Response:
    name, model = request.match_info["name"], request.match_info["model"]
    service_class = _state(request).system.service_classes.get(name)
    target = service_class.target_for(model) if service_class is not None else None
    if target is None:
        return _message(404, f"service class {name} has no target for model {model}")
    return _reply(wire.target_to_wire(target))


async def remove_service_class_target(request: web.Request) -> web.Response:
    name, model = request.match_info["name"], request.match_info["model"]
    state = _state(request)
    async with state.lock:
        service_class = state.system.service_classes.get(name)
        target = service_class.target_for(model) if service_class is not None else None
        if service_class is None or target is None:
            return _message(404, f"service class {name} has no target for model {model}")
        kept = tuple(t for t in service_class.targets if t.model != model)
        state.system.service_classes[name] = replace(service_class, targets=kept)
    return _reply(wire.target_to_wire(target))


async def apply_allocation(request: web.Request) -> web.Response:
    """Simulated actuation: every server's desired allocation (with its load) becomes its current one."""
    state = _state(request)
    async with state.lock:
        for name, server in list(state.system.servers.items()):
            if server.desired is not None:
                state.system.servers[name] = replace(server, current=server.desired)
    return _reply("Done")


# --- optimisation ----------------------------------------------------------------------------------------


async def optimize_held(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireOptimizerFlags)
    flags = wire.flags_from_wire(body)
    state = _state(request)
    async with state.lock:
        state.system.flags = flags
        return await _run(state, state.system.snapshot(), flags=flags, keep=True)


async def optimize_one(request: web.Request) -> web.Response:
    body = await _body(request, wire.WireSystemData)
    system = wire.system_from_wire(body)
    state = _state(request)
    async with state.lock:
        # Stateless: the posted system becomes the held one (the GET endpoints show it). Stateful: the held
        # system is left alone (the reference wiped it).
        keep = not state.stateful
        if keep:
            state.system = system
        return await _run(state, system.snapshot(), flags=system.flags, keep=keep)


async def _run(state: OptimizerState, system: System, *, flags: OptimizerFlags, keep: bool) -> web.Response:
    metrics = state.metrics
    started = time.perf_counter()
    try:
        # CPU-bound: off the event loop so health checks keep answering during a large run.
        solution: Solution = await asyncio.to_thread(optimize, system, flags)
    except InvalidSystemError as error:
        metrics.runs.labels("invalid").inc()
        return _message(400, f"invalid system: {error}")
    except (MilpError, MilpUnavailableError) as error:
        metrics.runs.labels("error").inc()
        return _message(404, f"optimization error: {error}")
    metrics.runs.labels("success").inc()
    metrics.run_seconds.observe(time.perf_counter() - started)
    metrics.servers.labels("allocated").set(len(solution.allocations))
    metrics.servers.labels("unallocated").set(len(solution.unallocated))
    metrics.cost.set(solution.total_cost)
    if keep:
        desired = solution.desired()
        for name, server in list(state.system.servers.items()):
            state.system.servers[name] = replace(server, desired=desired.get(name, Allocation()))
    return _reply(wire.solution_to_wire(solution))


# --- health and metrics ----------------------------------------------------------------------------------


async def healthz(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def metrics_endpoint(request: web.Request) -> web.Response:
    body = generate_latest(_state(request).metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


_READ_ROUTES: Final[list[tuple[str, str, Handler]]] = [
    ("GET", "/getAccelerators", ACCELERATORS.get_all),
    ("GET", "/getAccelerator/{name}", ACCELERATORS.get_one),
    ("GET", "/getCapacities", get_capacities),
    ("GET", "/getCapacity/{type}", get_capacity),
    ("GET", "/getModels", get_models),
    ("GET", "/getModel/{name}", get_model),
    ("GET", "/getServiceClasses", get_service_classes),
    ("GET", "/getServiceClass/{name}", get_service_class),
    ("GET", "/getServiceClassModelTarget/{name}/{model}", get_service_class_target),
    ("GET", "/getServers", SERVERS.get_all),
    ("GET", "/getServer/{name}", SERVERS.get_one),
    ("GET", "/getModelAcceleratorPerf/{name}/{acc}", get_model_perf),
    ("POST", "/optimizeOne", optimize_one),
]

_STATEFUL_ROUTES: Final[list[tuple[str, str, Handler]]] = [
    ("POST", "/setAccelerators", ACCELERATORS.set_all),
    ("POST", "/addAccelerator", ACCELERATORS.add),
    ("GET", "/removeAccelerator/{name}", ACCELERATORS.remove),
    ("POST", "/setCapacities", set_capacities),
    ("POST", "/setCapacity", set_capacity),
    ("GET", "/removeCapacity/{type}", remove_capacity),
    ("POST", "/setModels", set_models),
    ("GET", "/addModel/{name}", add_model),
    ("GET", "/removeModel/{name}", remove_model),
    ("POST", "/addModelAcceleratorPerf", add_model_perf),
    ("GET", "/removeModelAcceleratorPerf/{name}/{acc}", remove_model_perf),
    ("POST", "/setServiceClasses", set_service_classes),
    ("GET", "/addServiceClass/{name}/{priority}", add_service_class),
    ("POST", "/addServiceClassModelTargets", add_service_class_targets),
    ("POST", "/addServiceClassModelTarget", add_service_class_target),
    ("GET", "/removeServiceClassModelTarget/{name}/{model}", remove_service_class_target),
    ("POST", "/setServers", SERVERS.set_all),
    ("POST", "/addServer", SERVERS.add),
    ("GET", "/removeServer/{name}", SERVERS.remove),
    ("POST", "/optimize", optimize_held),
    ("GET", "/applyAllocation", apply_allocation),
]


def make_app(*, stateful: bool = False, registry: CollectorRegistry | None = None) -> web.Application:
    """The optimizer REST application; stateless serves only the read routes and /optimizeOne."""
    app = web.Application(middlewares=[_errors_and_metrics], client_max_size=MAX_BODY_BYTES)
    app[STATE] = OptimizerState(stateful=stateful, metrics=_Metrics(registry or CollectorRegistry()))
    routes = _READ_ROUTES + (_STATEFUL_ROUTES if stateful else [])
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", healthz)
    app.router.add_get("/metrics", metrics_endpoint)
    return app


# --- command line ----------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-F",
        "--stateful",
        action="store_true",
        help="keep a system edited through the REST API (default: stateless, /optimizeOne only)",
    )
    parser.add_argument("--host", default=None, help="listen address (default: $INFERNO_HOST, else all interfaces)")
    parser.add_argument(
        "--port",
        type=typed("--port", port_number),
        default=None,
        help=f"listen port (default: $INFERNO_PORT, else {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        type=str.lower,  # DEBUG is accepted too, as by the other commands
        choices=["debug", "info", "warning", "error"],
        help="log level (default: info)",
    )
    parser.add_argument(
        "--log-format",
        default="text",
        choices=["text", "json"],
        help="text, or json (one object per line) (default: text)",
    )


def listen_address(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[str | None, int]:
    """Flags win over INFERNO_HOST / INFERNO_PORT; an empty host means all interfaces."""
    host = args.host if args.host is not None else environ.get("INFERNO_HOST", "")
    if args.port is not None:
        port = args.port
    else:
        text = environ.get("INFERNO_PORT", "") or str(DEFAULT_PORT)
        try:
            port = int(text)
        except ValueError:
            raise ValueError(f"INFERNO_PORT={text!r} is not a port number") from None
    if not 0 < port < 65536:
        raise ValueError(f"port {port} is outside 1..65535")
    return (host or None), port


def run(args: argparse.Namespace) -> int:
    configure(level=args.log_level, fmt=args.log_format)
    try:
        host, port = listen_address(args, os.environ)
    except ValueError as error:
        logger.error("%s", error)
        return 2
    mode = "stateful" if args.stateful else "stateless"
    logger.info("inferno optimizer (%s) listening on %s:%d", mode, host or "*", port)
    web.run_app(make_app(stateful=args.stateful), host=host, port=port, print=None)
    return 0
