"""A remote Inferno optimizer over REST, as the reference controller used one: stateless (`POST /optimizeOne`)
or stateful (the namespace's objects mirrored level-based, then `POST /optimize`); one optimizer holds one
system, so operations are serialised (docs/design/inferno.md §9)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Final, TypeVar
from urllib.parse import quote

import aiohttp
from pydantic import BaseModel, ValidationError

from optimizer import wire
from optimizer.system import (
    Accelerator,
    Allocation,
    ModelTarget,
    PerfData,
    Server,
    ServiceClass,
    System,
)
from shared.errors import pydantic_detail_message

logger = logging.getLogger(__name__)

DEFAULT_HOST: Final = "localhost"
DEFAULT_PORT: Final = 8080
DEFAULT_TIMEOUT: Final = 60.0  # seconds per request; the reference optimizer's MILP gives up after 60 s
CONNECT_TIMEOUT: Final = 10.0
MAX_ERROR_TEXT: Final = 300
NO_ROUTE_HINT: Final = (
    "no such endpoint: is INFERNO_HOST:INFERNO_PORT an Inferno optimizer, started with -F for stateful mode?"
)

_Model = TypeVar("_Model", bound=BaseModel)
RequestObserver = Callable[[str, str, str], None]  # (method, endpoint template, status code or "error")


class RemoteOptimizerError(Exception):
    """A remote call failed. `retryable`: the same call may succeed later (unreachable, 5xx, timeout, an
    endpoint the optimizer does not serve until it is redeployed, a mirror write that raced another
    writer); otherwise the optimizer refused the system or flags we sent, and only changed input can help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True)
class RemoteSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    stateless: bool = True
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("the remote optimizer's host must not be empty")
        if not 0 < self.port < 65536:
            raise ValueError(f"the remote optimizer's port must be 1..65535, got {self.port}")
        if self.timeout <= 0:
            raise ValueError(f"the remote optimizer's timeout must be positive, got {self.timeout}")

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"http://{host}:{self.port}"

    @property
    def mode(self) -> str:
        return "stateless" if self.stateless else "stateful"


@dataclass(frozen=True)
class MirrorReport:
    """What one mirror changed in the optimizer: one entry per write request, e.g. `addServer s1`."""

    writes: tuple[str, ...] = ()


class RemoteOptimizer:
    def __init__(self, settings: RemoteSettings, *, observe: RequestObserver | None = None) -> None:
        self.settings = settings
        self._observe = observe
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ operations
    async def optimize_one(self, system: System) -> dict[str, Allocation]:
        """Stateless: optimise the posted system; server name -> desired allocation (absent: unallocated)."""
        async with self._session() as session:
            reply = await self._call(
                session, "POST", "/optimizeOne", body=wire.system_to_wire(system), refusal_is_final=True
            )
        return _solution(reply, endpoint="/optimizeOne")

    async def mirror(self, system: System) -> MirrorReport:
        """Stateful: make the optimizer's held system equal to `system`."""
        async with self._lock, self._session() as session:
            return await _Mirror(self, session).run(system)

    async def mirror_and_optimize(self, system: System) -> tuple[MirrorReport, dict[str, Allocation]]:
        """Stateful: mirror, then `POST /optimize` with the system's flags, with no other mirror in between."""
        async with self._lock, self._session() as session:
            report = await _Mirror(self, session).run(system)
            reply = await self._call(
                session, "POST", "/optimize", body=wire.flags_to_wire(system.flags), refusal_is_final=True
            )
        return report, _solution(reply, endpoint="/optimize")

    # ------------------------------------------------------------------ transport
    def _session(self) -> aiohttp.ClientSession:
        timeout = aiohttp.ClientTimeout(
            total=self.settings.timeout, connect=min(CONNECT_TIMEOUT, self.settings.timeout)
        )
        return aiohttp.ClientSession(base_url=self.settings.base_url, timeout=timeout, raise_for_status=False)

    async def _call(
        self,
        session: aiohttp.ClientSession,
        method: str,
        path: str,
        *,
        endpoint: str | None = None,
        body: Any = None,
        refusal_is_final: bool = False,
    ) -> Any:
        """One request; the decoded JSON reply of a 200, else RemoteOptimizerError naming the call.

        `refusal_is_final`: a 4xx with the optimizer's own message (bad system, MILP failure) is not worth
        retrying with the same input. A 4xx without one is a missing route: the wrong service, or a
        stateless optimizer asked for stateful endpoints; retried, since redeploying it fixes that."""
        endpoint = endpoint or path
        where = f"{method} {self.settings.base_url}{path}"
        try:
            async with session.request(method, path, json=body) as response:
                status = response.status
                payload = await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            self._count(method, endpoint, "error")
            detail = str(error) or "no answer"
            if isinstance(error, TimeoutError):
                detail = f"no answer within {self.settings.timeout:g}s"
            raise RemoteOptimizerError(f"{where}: {type(error).__name__}: {detail}", retryable=True) from error
        self._count(method, endpoint, str(status))
        if status != 200:
            text, from_optimizer = _error_text(payload)
            if status in (404, 405) and not from_optimizer:
                text += f" ({NO_ROUTE_HINT})"
            refused = 400 <= status < 500 and status not in (408, 429) and from_optimizer
            retryable = not (refused and refusal_is_final)
            raise RemoteOptimizerError(f"{where}: HTTP {status}: {text}", retryable=retryable)
        try:
            return json.loads(payload) if payload else None
        except ValueError as error:
            raise RemoteOptimizerError(f"{where}: the reply is not JSON: {error}", retryable=True) from None

    def _count(self, method: str, endpoint: str, code: str) -> None:
        if self._observe is not None:
            self._observe(method, endpoint, code)


def _error_text(payload: bytes) -> tuple[str, bool]:
    """The reason in an error reply, and whether it is the optimizer's own JSON message (a route missing,
    a proxy or another service answer with plain text)."""
    text = payload.decode("utf-8", "replace").strip()
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    from_optimizer = True
    if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
        text = decoded["message"]
    elif isinstance(decoded, str):  # the reference answers some 404s with a bare JSON string
        text = decoded
    else:
        # The reference's own 400 for a body it cannot bind is empty, so an empty body still counts as its own.
        from_optimizer = not text
    text = text or "(empty body)"
    return (text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 3] + "..."), from_optimizer


def _solution(reply: Any, *, endpoint: str) -> dict[str, Allocation]:
    try:
        return wire.solution_from_wire(reply)
    except ValidationError as error:
        raise RemoteOptimizerError(
            f"{endpoint}: the reply is not an AllocationSolution: {_first_error(error)}", retryable=False
        ) from None


def _parse(model: type[_Model], data: Any, *, endpoint: str) -> _Model:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise RemoteOptimizerError(f"{endpoint}: unexpected reply: {_first_error(error)}", retryable=False) from None


def _first_error(error: ValidationError) -> str:
    detail = error.errors()[0]
    path = ".".join(str(part) for part in detail["loc"]) or "body"
    return f"{path}: {pydantic_detail_message(detail)}"


def _segment(value: str) -> str:
    return quote(value, safe="")


class _Mirror:
    """One mirror pass: read the optimizer's state, then write the differences in dependency order (what is
    referred to before what refers to it; removals in the reverse order)."""

    def __init__(self, remote: RemoteOptimizer, session: aiohttp.ClientSession) -> None:
        self._remote = remote
        self._session = session
        self._writes: list[str] = []

    async def _get(self, path: str, *, endpoint: str) -> Any:
        return await self._remote._call(self._session, "GET", path, endpoint=endpoint)

    async def _write(self, method: str, path: str, *, endpoint: str, what: str, body: Any = None) -> None:
        await self._remote._call(self._session, method, path, endpoint=endpoint, body=body)
        self._writes.append(what)

    async def run(self, system: System) -> MirrorReport:
        accelerators = await self._accelerators()
        capacity = await self._capacity()
        models = await self._models()
        classes = await self._service_classes()
        servers = await self._servers()

        for name, accelerator in system.accelerators.items():
            if accelerators.get(name) != accelerator:
                await self._write(
                    "POST",
                    "/addAccelerator",
                    endpoint="/addAccelerator",
                    what=f"addAccelerator {name}",
                    body=wire.accelerator_to_wire(accelerator),
                )
        changed_counts = {t: n for t, n in system.capacity.items() if capacity.get(t) != n}
        if changed_counts:
            await self._write(
                "POST",
                "/setCapacities",
                endpoint="/setCapacities",
                what=f"setCapacities {','.join(sorted(changed_counts))}",
                body=wire.capacity_to_wire(changed_counts),
            )
        for name, perf in system.models.items():
            await self._model(name, wanted=perf, held=models.get(name))
        for name, service_class in system.service_classes.items():
            await self._service_class(service_class, held=classes.get(name))
        for name, server in system.servers.items():
            held = servers.get(name)
            # desiredAlloc is the optimizer's output, not an input: a difference there is no reason to write.
            if held is None or replace(held, desired=None) != replace(server, desired=None):
                await self._write(
                    "POST",
                    "/addServer",
                    endpoint="/addServer",
                    what=f"addServer {name}",
                    body=wire.server_to_wire(server),
                )

        for name in _stale(servers, system.servers):
            await self._write(
                "GET", f"/removeServer/{_segment(name)}", endpoint="/removeServer/{name}", what=f"removeServer {name}"
            )
        for name in _stale(classes, system.service_classes):
            for model in sorted(target.model for target in classes[name].targets):
                await self._remove_target(name, model)
        for name in _stale(models, system.models):
            await self._write(
                "GET", f"/removeModel/{_segment(name)}", endpoint="/removeModel/{name}", what=f"removeModel {name}"
            )
        for name in _stale(accelerators, system.accelerators):
            await self._write(
                "GET",
                f"/removeAccelerator/{_segment(name)}",
                endpoint="/removeAccelerator/{name}",
                what=f"removeAccelerator {name}",
            )
        for acc_type in _stale(capacity, system.capacity):
            await self._write(
                "GET",
                f"/removeCapacity/{_segment(acc_type)}",
                endpoint="/removeCapacity/{type}",
                what=f"removeCapacity {acc_type}",
            )
        if self._writes:
            logger.info("inferno: mirrored into %s: %s", self._remote.settings.base_url, ", ".join(self._writes))
        return MirrorReport(writes=tuple(self._writes))

    # ------------------------------------------------------------------ reading the held state
    async def _accelerators(self) -> dict[str, Accelerator]:
        reply = await self._get("/getAccelerators", endpoint="/getAccelerators")
        items = reply if isinstance(reply, list) else []
        parsed = [_parse(wire.WireAccelerator, item, endpoint="/getAccelerators") for item in items]
        return {item.name: wire.accelerator_from_wire(item) for item in parsed}

    async def _capacity(self) -> dict[str, int]:
        reply = _parse(
            wire.WireCapacityData,
            await self._get("/getCapacities", endpoint="/getCapacities"),
            endpoint="/getCapacities",
        )
        return {entry.type: entry.count for entry in reply.count}

    async def _models(self) -> dict[str, dict[str, PerfData]]:
        names = await self._get("/getModels", endpoint="/getModels")
        models: dict[str, dict[str, PerfData]] = {}
        for name in names if isinstance(names, list) else []:
            if not isinstance(name, str):
                continue
            reply = await self._get(f"/getModel/{_segment(name)}", endpoint="/getModel/{name}")
            data = _parse(wire.WireModelData, reply, endpoint="/getModel/{name}")
            models[name] = {perf.acc: wire.perf_from_wire(perf) for perf in data.models}
        return models

    async def _service_classes(self) -> dict[str, ServiceClass]:
        reply = _parse(
            wire.WireServiceClassData,
            await self._get("/getServiceClasses", endpoint="/getServiceClasses"),
            endpoint="/getServiceClasses",
        )
        return {item.name: wire.service_class_from_wire(item) for item in reply.service_classes}

    async def _servers(self) -> dict[str, Server]:
        reply = _parse(
            wire.WireServerData, await self._get("/getServers", endpoint="/getServers"), endpoint="/getServers"
        )
        return {item.name: wire.server_from_wire(item) for item in reply.servers}

    # ------------------------------------------------------------------ writing
    async def _model(self, name: str, *, wanted: dict[str, PerfData], held: dict[str, PerfData] | None) -> None:
        if held is None:
            await self._write(
                "GET", f"/addModel/{_segment(name)}", endpoint="/addModel/{name}", what=f"addModel {name}"
            )
            held = {}
        for acc, perf in wanted.items():
            if held.get(acc) != perf:
                await self._write(
                    "POST",
                    "/addModelAcceleratorPerf",
                    endpoint="/addModelAcceleratorPerf",
                    what=f"addModelAcceleratorPerf {name}/{acc}",
                    body=wire.perf_to_wire(perf),
                )
        for acc in _stale(held, wanted):
            await self._write(
                "GET",
                f"/removeModelAcceleratorPerf/{_segment(name)}/{_segment(acc)}",
                endpoint="/removeModelAcceleratorPerf/{name}/{acc}",
                what=f"removeModelAcceleratorPerf {name}/{acc}",
            )

    async def _service_class(self, wanted: ServiceClass, *, held: ServiceClass | None) -> None:
        held_targets: dict[str, ModelTarget] = {}
        if held is None or held.priority != wanted.priority:
            # addServiceClass replaces the class with an empty one; the targets follow in one request.
            await self._write(
                "GET",
                f"/addServiceClass/{_segment(wanted.name)}/{wanted.priority}",
                endpoint="/addServiceClass/{name}/{priority}",
                what=f"addServiceClass {wanted.name}",
            )
        else:
            held_targets = {target.model: target for target in held.targets}
        wanted_targets = {target.model: target for target in wanted.targets}
        changed = [target for model, target in wanted_targets.items() if held_targets.get(model) != target]
        if changed:
            body = wire.service_class_to_wire(replace(wanted, targets=tuple(changed)))
            await self._write(
                "POST",
                "/addServiceClassModelTargets",
                endpoint="/addServiceClassModelTargets",
                what=f"addServiceClassModelTargets {wanted.name}",
                body=body,
            )
        for model in _stale(held_targets, wanted_targets):
            await self._remove_target(wanted.name, model)

    async def _remove_target(self, name: str, model: str) -> None:
        await self._write(
            "GET",
            f"/removeServiceClassModelTarget/{_segment(name)}/{_segment(model)}",
            endpoint="/removeServiceClassModelTarget/{name}/{model}",
            what=f"removeServiceClassModelTarget {name}/{model}",
        )


def _stale(held: Iterable[str], wanted: Iterable[str]) -> list[str]:
    keep = set(wanted)
    return sorted(name for name in held if name not in keep)
