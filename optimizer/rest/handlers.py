"""The reference optimizer's endpoints (docs/design/inferno.md §10): the held system's accelerators, servers,
capacities, models and service classes (read in both modes, edited in stateful mode), and the optimisation runs.
Same paths and JSON as the reference; where we differ, and why, is in the design record."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, Generic, TypeVar

from aiohttp import web
from pydantic import BaseModel

from optimizer import wire
from optimizer.milp import MilpError, MilpUnavailableError
from optimizer.optimize import InvalidSystemError, Solution, optimize
from optimizer.rest import replies
from optimizer.rest.state import OptimizerState, state_of
from optimizer.system import Allocation, OptimizerFlags, ServiceClass, System
from shared.api.inferno import HIGHEST_PRIORITY, LOWEST_PRIORITY

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
        body: Any = await replies.body(request, self.bulk)  # a wire model: it has dump()
        state = state_of(request)
        async with state.lock:
            for entry in self.bulk_items(body):
                self.items(state.system)[entry.name] = self.from_wire(entry)
        return replies.reply(body.dump())

    async def get_all(self, request: web.Request) -> web.Response:
        items = self.items(state_of(request).system).values()
        return replies.reply(self.listing([self.to_wire(item) for item in items]))

    async def get_one(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        item = self.items(state_of(request).system).get(name)
        if item is None:
            return replies.message(404, f"{self.noun} {name} not found")
        return replies.reply(self.to_wire(item))

    async def add(self, request: web.Request) -> web.Response:
        body = await replies.body(request, self.single)
        state = state_of(request)
        async with state.lock:
            self.items(state.system)[body.name] = self.from_wire(body)
        return replies.reply(body.dump())

    async def remove(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        state = state_of(request)
        async with state.lock:
            item = self.items(state.system).pop(name, None)
        if item is None:
            return replies.message(404, f"{self.noun} {name} not found")
        return replies.reply(self.to_wire(item))


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
    body = await replies.body(request, wire.WireCapacityData)
    state = state_of(request)
    async with state.lock:
        for count in body.count:
            state.system.capacity[count.type] = count.count
    return replies.reply(body.dump())


async def get_capacities(request: web.Request) -> web.Response:
    return replies.reply(wire.capacity_to_wire(state_of(request).system.capacity))


async def get_capacity(request: web.Request) -> web.Response:
    acc_type = request.match_info["type"]
    count = state_of(request).system.capacity.get(acc_type)
    if count is None:
        return replies.message(404, f"capacity for accelerator type {acc_type} not found")
    return replies.reply({"type": acc_type, "count": count})


async def set_capacity(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WireCount)
    state = state_of(request)
    async with state.lock:
        state.system.capacity[body.type] = body.count
    return replies.reply(body.dump())


async def remove_capacity(request: web.Request) -> web.Response:
    acc_type = request.match_info["type"]
    state = state_of(request)
    async with state.lock:
        count = state.system.capacity.pop(acc_type, None)
    if count is None:
        return replies.message(404, f"capacity for accelerator type {acc_type} not found")
    return replies.reply({"type": acc_type, "count": count})


# --- models ----------------------------------------------------------------------------------------------


async def set_models(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WireModelData)
    state = state_of(request)
    async with state.lock:
        for perf in body.models:
            state.system.models.setdefault(perf.name, {})[perf.acc] = wire.perf_from_wire(perf)
    return replies.reply(body.dump())


async def get_models(request: web.Request) -> web.Response:
    return replies.reply(list(state_of(request).system.models))


async def get_model(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    perf = state_of(request).system.models.get(name)
    if perf is None:
        return replies.message(404, f"model {name} not found")
    return replies.reply({"models": [wire.perf_to_wire(p) for p in perf.values()]})


async def add_model(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    state = state_of(request)
    async with state.lock:
        state.system.models[name] = {}  # replaces: an existing model loses its perf data (reference behaviour)
    return replies.reply(name)


async def remove_model(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    state = state_of(request)
    async with state.lock:
        removed = state.system.models.pop(name, None)
    if removed is None:
        return replies.message(404, f"model {name} not found")
    return replies.reply(name)


async def get_model_perf(request: web.Request) -> web.Response:
    name, acc = request.match_info["name"], request.match_info["acc"]
    perf = state_of(request).system.perf(name, acc)
    if perf is None:
        return replies.message(404, f"model {name} has no data for accelerator {acc}")
    return replies.reply(wire.perf_to_wire(perf))


async def add_model_perf(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WirePerf)
    state = state_of(request)
    async with state.lock:
        perf = state.system.models.get(body.name)
        if perf is None:
            return replies.message(404, f"model {body.name} not found")
        perf[body.acc] = wire.perf_from_wire(body)
    return replies.reply(body.dump())


async def remove_model_perf(request: web.Request) -> web.Response:
    name, acc = request.match_info["name"], request.match_info["acc"]
    state = state_of(request)
    async with state.lock:
        removed = state.system.models.get(name, {}).pop(acc, None)
    if removed is None:
        return replies.message(404, f"model {name} has no data for accelerator {acc}")
    return replies.reply(wire.perf_to_wire(removed))


# --- service classes -------------------------------------------------------------------------------------


async def set_service_classes(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WireServiceClassData)
    state = state_of(request)
    async with state.lock:
        for service_class in body.service_classes:
            state.system.service_classes[service_class.name] = wire.service_class_from_wire(service_class)
    return replies.reply(body.dump())


async def get_service_classes(request: web.Request) -> web.Response:
    classes = state_of(request).system.service_classes.values()
    return replies.reply({"serviceClasses": [wire.service_class_to_wire(c) for c in classes]})


async def get_service_class(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    service_class = state_of(request).system.service_classes.get(name)
    if service_class is None:
        return replies.message(404, f"service class {name} not found")
    return replies.reply(wire.service_class_to_wire(service_class))


async def add_service_class(request: web.Request) -> web.Response:
    name, text = request.match_info["name"], request.match_info["priority"]
    try:
        priority = int(text)
    except ValueError:
        return replies.message(400, f"priority {text!r} is not an integer")
    if not HIGHEST_PRIORITY <= priority <= LOWEST_PRIORITY:
        return replies.message(400, f"priority {priority} is outside {HIGHEST_PRIORITY}..{LOWEST_PRIORITY}")
    service_class = ServiceClass(name=name, priority=priority)
    state = state_of(request)
    async with state.lock:
        state.system.service_classes[name] = service_class
    return replies.reply(wire.service_class_to_wire(service_class))


async def add_service_class_targets(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WireServiceClass)
    targets = [wire.target_from_wire(t) for t in body.model_targets]
    return await _add_targets(request, name=body.name, priority=body.priority, targets=targets)


async def add_service_class_target(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WireFlatTarget)
    return await _add_targets(request, name=body.name, priority=body.priority, targets=[wire.target_from_wire(body)])


async def _add_targets(request: web.Request, *, name: str, priority: int, targets: list[Any]) -> web.Response:
    state = state_of(request)
    async with state.lock:
        service_class = state.system.service_classes.get(name)
        if service_class is None:
            return replies.reply(f"service class {name} not found", status=404)
        if priority != service_class.priority:
            return replies.message(
                400, f"priority {priority} does not match service class {name}'s priority {service_class.priority}"
            )
        by_model = {t.model: t for t in service_class.targets}
        by_model.update({t.model: t for t in targets})
        updated = replace(service_class, targets=tuple(by_model.values()))
        state.system.service_classes[name] = updated
    return replies.reply(wire.service_class_to_wire(updated))


async def get_service_class_target(request: web.Request) -> web.Response:
    name, model = request.match_info["name"], request.match_info["model"]
    service_class = state_of(request).system.service_classes.get(name)
    target = service_class.target_for(model) if service_class is not None else None
    if target is None:
        return replies.message(404, f"service class {name} has no target for model {model}")
    return replies.reply(wire.target_to_wire(target))


async def remove_service_class_target(request: web.Request) -> web.Response:
    name, model = request.match_info["name"], request.match_info["model"]
    state = state_of(request)
    async with state.lock:
        service_class = state.system.service_classes.get(name)
        target = service_class.target_for(model) if service_class is not None else None
        if service_class is None or target is None:
            return replies.message(404, f"service class {name} has no target for model {model}")
        kept = tuple(t for t in service_class.targets if t.model != model)
        state.system.service_classes[name] = replace(service_class, targets=kept)
    return replies.reply(wire.target_to_wire(target))


async def apply_allocation(request: web.Request) -> web.Response:
    """Simulated actuation: every server's desired allocation (with its load) becomes its current one."""
    state = state_of(request)
    async with state.lock:
        for name, server in list(state.system.servers.items()):
            if server.desired is not None:
                state.system.servers[name] = replace(server, current=server.desired)
    return replies.reply("Done")


# --- optimisation ----------------------------------------------------------------------------------------


async def optimize_held(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WireOptimizerFlags)
    flags = wire.flags_from_wire(body)
    state = state_of(request)
    async with state.lock:
        state.system.flags = flags
        return await _run(state, state.system.snapshot(), flags=flags, keep=True)


async def optimize_one(request: web.Request) -> web.Response:
    body = await replies.body(request, wire.WireSystemData)
    system = wire.system_from_wire(body)
    state = state_of(request)
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
        return replies.message(400, f"invalid system: {error}")
    except (MilpError, MilpUnavailableError) as error:
        metrics.runs.labels("error").inc()
        return replies.message(404, f"optimization error: {error}")
    metrics.runs.labels("success").inc()
    metrics.run_seconds.observe(time.perf_counter() - started)
    metrics.servers.labels("allocated").set(len(solution.allocations))
    metrics.servers.labels("unallocated").set(len(solution.unallocated))
    metrics.cost.set(solution.total_cost)
    if keep:
        desired = solution.desired()
        for name, server in list(state.system.servers.items()):
            state.system.servers[name] = replace(server, desired=desired.get(name, Allocation()))
    return replies.reply(wire.solution_to_wire(solution))
