"""The aiohttp application: routing of Kubernetes REST paths, query options, faults, logging, watch streams."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml
from aiohttp import web

from tests.fakeapi import discovery, scale
from tests.fakeapi import errors as e
from tests.fakeapi.admission import AdmissionSettings
from tests.fakeapi.builtin import builtin_resources
from tests.fakeapi.controllers import Controllers
from tests.fakeapi.errors import ApiError, GroupKind
from tests.fakeapi.faults import Faults, RequestFacts
from tests.fakeapi.reqlog import LoggedRequest, RequestLog
from tests.fakeapi.resources import ResourceInfo
from tests.fakeapi.rest import NAMESPACE_KEY, Registry, Request
from tests.fakeapi.store import Store
from tests.fakeapi.util import Clock, system_clock
from tests.fakeapi.watch import StoreEvent, Watcher, WatchHub, _Close

Obj = dict[str, Any]
_log = logging.getLogger("tests.fakeapi")

DEFAULT_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
MAX_BODY_BYTES: Final = 3 * 1024 * 1024


@dataclass
class ServerConfig:
    """Knobs of the fake. Defaults match kube-apiserver where a default exists."""

    history_size: int = 1000  # watch events kept per resource
    bookmark_interval: float = 60.0  # seconds between BOOKMARK events on watches that allow them
    require_namespaces: bool = True  # namespaced objects need an existing, non-terminating namespace
    namespaces: tuple[str, ...] = DEFAULT_NAMESPACES
    controller_delay: float = 0.0  # seconds before the garbage collector / finalizers act
    clock: Clock = system_clock
    admission: AdmissionSettings = field(default_factory=AdmissionSettings)


class FakeApi:
    """The state of one fake cluster, independent of how it is served."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.hub = WatchHub(history_size=config.history_size)
        self.store = Store(self.hub)
        self.registry = Registry(
            store=self.store,
            clock=config.clock,
            admission_settings=config.admission,
            require_namespaces=config.require_namespaces,
        )
        self.controllers = Controllers(self.registry, delay=config.controller_delay)
        self.faults = Faults()
        self.log = RequestLog()
        self.server_address = "127.0.0.1:0"
        for res in builtin_resources():
            self.registry.register(res)

    async def bootstrap(self) -> None:
        namespaces = self.registry.resources[("", "namespaces")]
        for name in self.config.namespaces:
            if self.store.get(NAMESPACE_KEY, "", name) is None:
                req = Request(namespaces, "v1", field_manager="kube-apiserver", field_manager_param=None)
                await self.registry.create(req, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


# ---- routing ------------------------------------------------------------------------------------------


@dataclass
class Target:
    res: ResourceInfo
    version: str
    namespace: str
    name: str
    subresource: str
    watch_path: bool


def _route(api: FakeApi, segments: list[str]) -> Target | Obj:
    """A resource target, or the body of a non-resource document (discovery, version, health)."""
    resources = api.registry.served()
    if not segments:
        return {"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]}
    head = segments[0]
    if head in ("healthz", "livez", "readyz") and len(segments) == 1:
        return {"__text__": "ok"}
    if head == "version" and len(segments) == 1:
        return discovery.SERVER_VERSION
    if head == "api":
        if len(segments) == 1:
            return discovery.api_versions(api.server_address)
        group, version, rest = "", segments[1], segments[2:]
        if not rest:
            found = discovery.api_resource_list(resources, "", version)
            if found is None:
                raise e.not_found_path()
            return found
    elif head == "apis":
        if len(segments) == 1:
            return discovery.api_group_list(resources)
        group = segments[1]
        if len(segments) == 2:
            found = discovery.api_group(resources, group)
            if found is None:
                raise e.page_not_found()
            return found
        version, rest = segments[2], segments[3:]
        if not rest:
            found = discovery.api_resource_list(resources, group, version)
            if found is None:
                raise e.page_not_found()
            return found
    else:
        raise e.page_not_found()
    # Under /apis the mux answers unknown resources in plain text; the legacy /api group with a Status.
    unknown = e.page_not_found if head == "apis" else e.not_found_path
    watch_path = False
    if rest[0] == "watch":
        watch_path, rest = True, rest[1:]
        if not rest:
            raise unknown()
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        candidate = api.registry.lookup(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    res = api.registry.lookup(group, version, rest[0])
    if res is None or len(rest) > 3:
        raise unknown()
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if res.namespaced and name and not namespace:
        raise unknown()
    if subresource and not (
        (subresource == "status" and res.has_status(version)) or (subresource == "scale" and res.scale(version))
    ):
        raise e.not_found_path()
    return Target(res, version, namespace, name, subresource, watch_path)


def _verb(method: str, target: Target, watch: bool) -> str:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if target.name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if target.name else "deletecollection"
    return method.lower()


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def _status_response(err: ApiError) -> web.Response:
    if err.text is not None:
        return web.Response(text=err.text, status=err.code, content_type="text/plain")
    response = web.json_response(err.status(), status=err.code, dumps=_dumps)
    for header, value in err.headers.items():
        response.headers[header] = value
    _add_warnings(response, err.warnings)
    return response


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_response(body: Obj, *, status: int, warnings: list[str]) -> web.Response:
    response = web.Response(body=_dumps(body).encode(), status=status, content_type="application/json")
    _add_warnings(response, warnings)
    return response


def _add_warnings(response: web.StreamResponse, warnings: list[str]) -> None:
    for warning in warnings:
        escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')


async def _read_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        return None
    content_type = request.content_type
    if "protobuf" in content_type or "cbor" in content_type:
        # Only JSON and YAML bodies are understood (kubectl's typed clients send protobuf: see __init__).
        raise e.unsupported_media_type(["application/json", "application/yaml"])
    try:
        if "yaml" in content_type:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as err:
        raise e.bad_request(f"couldn't get version/kind; json parse error: {err}") from err


def _query_int(query: Mapping[str, str], name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError as err:
        raise e.bad_request(f"invalid value for {name}: {value!r}") from err


def _make_request(target: Target, request: web.Request, verb: str) -> Request:
    query = request.query
    dry_run_values = query.getall("dryRun", [])
    for value in dry_run_values:
        if value != "All":
            options = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}.get(
                verb, "DeleteOptions"
            )
            raise e.invalid_object(GroupKind("meta.k8s.io", options), "", [e.not_supported("dryRun", value, ["All"])])
    validation = query.get("fieldValidation", "") or "Warn"
    if validation not in ("Ignore", "Warn", "Strict"):
        raise e.bad_request(f"fieldValidation must be one of Ignore, Warn, Strict; got {validation!r}")
    manager_param = query.get("fieldManager")
    user_agent = request.headers.get("User-Agent", "")
    manager = manager_param or user_agent.split("/")[0][:128] or "unknown"
    force_param = query.get("force")
    return Request(
        res=target.res,
        version=target.version,
        namespace=target.namespace,
        name=target.name,
        subresource=target.subresource,
        dry_run=bool(dry_run_values),
        field_manager=manager,
        field_manager_param=manager_param,
        field_validation=validation,
        force=None if force_param is None else _truthy(force_param),
    )


def make_app(api: FakeApi) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES)

    async def handle(request: web.Request) -> web.StreamResponse:
        segments = [s for s in request.path.split("/") if s]
        method = request.method
        logged_verb = ""
        target: Target | None = None
        status = 500
        body: Any = None
        try:
            routed = _route(api, segments)
            if isinstance(routed, Target):
                target = routed
                watch = target.watch_path or _truthy(request.query.get("watch"))
                logged_verb = _verb(method, target, watch)
                resource = target.res.plural + (f"/{target.subresource}" if target.subresource else "")
                facts = RequestFacts(logged_verb, resource, target.namespace, target.name, request.path)
                for rule in api.faults.take(facts):
                    if rule.action == "delay":
                        await asyncio.sleep(rule.seconds)
                    elif rule.action == "reset":
                        if request.transport is not None:
                            request.transport.abort()
                        status = 0
                        return web.Response(status=500)
                    else:
                        failure = ApiError(rule.status, rule.reason, rule.message, {})
                        if rule.retry_after is not None:
                            failure.headers["Retry-After"] = str(rule.retry_after)
                            failure.details = {"retryAfterSeconds": rule.retry_after}
                        raise failure
                if method in ("POST", "PUT"):
                    body = await _read_body(request)
                response = await _dispatch(api, request, target, logged_verb, body)
            else:
                if method != "GET":
                    raise e.ApiError(
                        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                    )
                if "__text__" in routed:
                    response = web.Response(text=str(routed["__text__"]), content_type="text/plain")
                else:
                    response = _json_response(routed, status=200, warnings=[])
            status = response.status
            return response
        except ApiError as err:
            status = err.code
            return _status_response(err)
        except Exception as err:
            # A bug in the fake: answer like kube-apiserver answers a panic, and keep the traceback in the log.
            _log.exception("fakeapi failed on %s %s", method, request.path)
            status = 500
            return _status_response(e.internal(f"fakeapi: {type(err).__name__}: {err}"))
        finally:
            api.log.add(
                LoggedRequest(
                    method=method,
                    path=request.path,
                    query=dict(request.query),
                    verb=logged_verb,
                    group=target.res.group if target else "",
                    resource=target.res.plural if target else "",
                    subresource=target.subresource if target else "",
                    namespace=target.namespace if target else "",
                    name=target.name if target else "",
                    content_type=request.content_type if request.body_exists else "",
                    user_agent=request.headers.get("User-Agent", ""),
                    status=status,
                    body=body,
                )
            )

    app.router.add_route("*", "/{tail:.*}", handle)

    async def on_startup(_app: web.Application) -> None:
        await api.bootstrap()
        api.controllers.start()

    async def on_shutdown(_app: web.Application) -> None:
        api.hub.close_all()

    async def on_cleanup(_app: web.Application) -> None:
        await api.controllers.stop()
        await api.registry.admission.close()

    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)
    return app


async def _dispatch(api: FakeApi, request: web.Request, target: Target, verb: str, body: Any) -> web.StreamResponse:
    req = _make_request(target, request, verb)
    try:
        return await _dispatch_request(api, request, target=target, verb=verb, body=body, req=req)
    except ApiError as err:
        # Like kube-apiserver, warnings gathered before the failure (pruned unknown fields) go out with it.
        err.warnings = [*req.warnings, *err.warnings]
        raise


async def _dispatch_request(
    api: FakeApi, request: web.Request, *, target: Target, verb: str, body: Any, req: Request
) -> web.StreamResponse:
    registry = api.registry
    query = request.query
    if target.subresource == "scale":
        raw = await request.read() if verb == "patch" else b""
        code, scale_obj = await scale.serve(registry, req, verb, body=body, raw=raw, content_type=request.content_type)
        return _json_response(scale_obj, status=code, warnings=req.warnings)
    if verb == "watch":
        return await _serve_watch(api, request, req)
    if verb == "get":
        return _json_response(registry.get(req), status=200, warnings=req.warnings)
    if verb == "list":
        listed = registry.list_objects(
            req,
            label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"),
            limit=_query_int(query, "limit"),
            continue_token=query.get("continue") or None,
        )
        return _json_response(listed, status=200, warnings=req.warnings)
    if verb == "create":
        if target.subresource:
            raise e.method_not_supported(target.res.group_resource, "create")
        if target.res.namespaced and not target.namespace:
            raise e.not_found_path()
        code, obj = await registry.create(req, body)
        return _json_response(obj, status=code, warnings=req.warnings)
    if verb == "update":
        code, obj = await registry.update(req, body)
        return _json_response(obj, status=code, warnings=req.warnings)
    if verb == "patch":
        if not target.name:
            raise e.method_not_supported(target.res.group_resource, "patch")
        raw = await request.read()
        content_type = request.content_type
        code, obj = await registry.patch(req, raw, content_type)
        return _json_response(obj, status=code, warnings=req.warnings)
    if verb in ("delete", "deletecollection"):
        options = await _delete_options(request)
        if verb == "delete":
            code, obj = await registry.delete(req, options)
            return _json_response(obj, status=code, warnings=req.warnings)
        listed = await registry.delete_collection(
            req, options, label_selector=query.get("labelSelector"), field_selector=query.get("fieldSelector")
        )
        return _json_response(listed, status=200, warnings=req.warnings)
    raise e.ApiError(405, "MethodNotAllowed", f"{request.method} is not supported")


async def _delete_options(request: web.Request) -> Obj:
    options: Obj = {}
    raw = await request.read()
    if raw:
        try:
            parsed = json.loads(raw)
        except ValueError as err:
            raise e.bad_request(f"couldn't get version/kind; json parse error: {err}") from err
        if isinstance(parsed, dict):
            options.update(parsed)
    query = request.query
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = _truthy(query["orphanDependents"])
    return options


# ---- watch ----------------------------------------------------------------------------------------------


def _event_line(kind: str, obj: Obj) -> bytes:
    return (_dumps({"type": kind, "object": obj}) + "\n").encode()


async def _serve_watch(api: FakeApi, request: web.Request, req: Request) -> web.StreamResponse:
    registry = api.registry
    res = req.res
    query = request.query
    field_selector = query.get("fieldSelector") or ""
    if req.name:
        field_selector = ",".join(p for p in (field_selector, f"metadata.name={req.name}") if p)
    matches = registry.matcher(req, label_selector=query.get("labelSelector"), field_selector=field_selector or None)
    timeout = _query_int(query, "timeoutSeconds")
    bookmarks = _truthy(query.get("allowWatchBookmarks"))
    send_initial = _truthy(query.get("sendInitialEvents"))
    rv_param = query.get("resourceVersion") or ""
    start_rv: int | None = None
    if rv_param not in ("", "0") and not send_initial:
        try:
            start_rv = int(rv_param)
        except ValueError as err:
            raise e.bad_request(
                f'resourceVersion: Invalid value: "{rv_param}": strconv.ParseUint: parsing "{rv_param}": invalid syntax'
            ) from err
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()

    def served(obj: Obj) -> Obj:
        return registry.external(res, req.version, obj)

    # A resourceVersion the server has not reached yet: kube-apiserver v1.36.2 keeps the watch open and sends the
    # events after it once they happen (no error, however long it takes).
    ahead = start_rv if start_rv is not None and start_rv > api.store.rv else 0

    def bookmark(annotate: bool = False) -> bytes:
        metadata: Obj = {"resourceVersion": str(max(api.store.rv, ahead))}  # never behind what was asked for
        if annotate:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        return _event_line(
            "BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version(req.version), "metadata": metadata}
        )

    watcher = api.hub.subscribe(res.storage_key, matches)
    watcher.after_rv = ahead
    try:
        if ahead:
            first: list[bytes] = []
        elif start_rv is None:
            first = [
                _event_line("ADDED", served(o))
                for o in api.store.items(res.storage_key, req.namespace or None)
                if matches(o)
            ]
            if send_initial and bookmarks:
                first.append(bookmark(annotate=True))
        else:
            try:
                history = api.hub.since(res.storage_key, start_rv)
            except ApiError as expired:
                await response.prepare(request)
                await response.write(_event_line("ERROR", expired.status()))
                return response
            first = []
            for event in history:
                seen = watcher.translate(event)
                if seen is not None:
                    first.append(_event_line(seen[0], served(seen[1])))
        await response.prepare(request)
        if first:
            await response.write(b"".join(first))
        await _pump(
            api, request, response, watcher, served=served, bookmark=bookmark if bookmarks else None, lifetime=timeout
        )
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        api.hub.unsubscribe(watcher)
    return response


async def _pump(
    api: FakeApi,
    request: web.Request,
    response: web.StreamResponse,
    watcher: Watcher,
    *,
    served: Callable[[Obj], Obj],
    bookmark: Callable[[], bytes] | None,
    lifetime: int | None,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + lifetime if lifetime else None
    interval = api.config.bookmark_interval
    next_bookmark = loop.time() + interval
    while True:
        if watcher.closing is not None:
            _finish(request, watcher.closing)
            return
        now = loop.time()
        if deadline is not None and now >= deadline:
            await _end_at_deadline(request, response, watcher, served=served, bookmark=bookmark)
            return
        if watcher.stalled:
            await asyncio.sleep(0.02)
            continue
        wake = (
            min(t for t in (deadline, next_bookmark if bookmark else None) if t is not None)
            if (deadline is not None or bookmark is not None)
            else None
        )
        try:
            if wake is None:
                item = await watcher.queue.get()
            else:
                item = await asyncio.wait_for(watcher.queue.get(), max(wake - now, 0.0))
        except TimeoutError:
            if bookmark is not None and loop.time() >= next_bookmark and watcher.queue.empty():
                await response.write(bookmark())
                next_bookmark = loop.time() + interval
            continue
        if isinstance(item, _Close):
            _finish(request, item)
            return
        if watcher.stalled:
            # Stalled while waiting: keep the event for later, like a stream that stopped moving.
            requeue = [item]
            while not watcher.queue.empty():
                requeue.append(watcher.queue.get_nowait())
            for queued in requeue:
                watcher.queue.put_nowait(queued)
            continue
        lines, closing = _drain(watcher, item, served=served)
        if lines:
            await response.write(b"".join(lines))
        if closing is not None:
            _finish(request, closing)
            return


def _drain(
    watcher: Watcher, first: StoreEvent | _Close | None, *, served: Callable[[Obj], Obj]
) -> tuple[list[bytes], _Close | None]:
    """The lines for `first` and every event queued behind it, and the close request met on the way, if any."""
    batch: list[StoreEvent | _Close] = [first] if first is not None else []
    while not watcher.queue.empty():
        batch.append(watcher.queue.get_nowait())
    lines: list[bytes] = []
    for event in batch:
        if isinstance(event, _Close):
            return lines, event
        seen = watcher.translate(event)
        if seen is not None:
            lines.append(_event_line(seen[0], served(seen[1])))
    return lines, None


async def _end_at_deadline(
    request: web.Request,
    response: web.StreamResponse,
    watcher: Watcher,
    *,
    served: Callable[[Obj], Obj],
    bookmark: Callable[[], bytes] | None,
) -> None:
    """`timeoutSeconds` is up. The closing bookmark promises every change up to its resourceVersion was sent,
    and a client resumes from it, so the events still queued for this watcher go out first (they may have
    queued while a write to a slow reader waited). A stalled stream just ends: it sent nothing more."""
    if watcher.stalled:
        return
    lines, closing = _drain(watcher, None, served=served)
    if closing is None and bookmark is not None:
        lines.append(bookmark())  # in the same step as the drain: nothing can slip in between
    if lines:
        await response.write(b"".join(lines))
    if closing is not None:
        _finish(request, closing)


def _finish(request: web.Request, closing: _Close) -> None:
    if closing.abort and request.transport is not None:
        request.transport.abort()
