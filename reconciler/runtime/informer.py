"""Informers: list+watch loops that keep an in-memory cache of one kind and notify handlers of changes.

Per namespace scope (all namespaces, or each configured namespace) a reflector:
1. lists (paginated) and replaces its part of the cache, emitting ADDED/MODIFIED/DELETED for what changed since
   the previous list — so a re-list after `410 Gone` loses nothing, deletions included;
2. watches from the list's resourceVersion with bookmarks, a server-side `timeoutSeconds` and a client read
   timeout a little longer, so a silently dead connection is noticed and the watch re-opened;
3. on stream end re-watches from the last resourceVersion seen (events or bookmarks); on `410 Gone` (HTTP status
   or ERROR event) re-lists; on other errors backs off exponentially and retries, also from the last
   resourceVersion seen (a broken stream's events are not replayed). The backoff is capped low (4 s) and spread
   over its upper half at random, so that after an outage every informer is back within seconds and they do
   not all come back in the same instant; the failures of one outage make one log line, and one more when the
   informer works again (runtime/outage.py).

A `transform` shapes what the cache holds (see reconciler/runtime/lean.py); it must keep metadata name,
namespace and resourceVersion. It runs once per new state: not for the echo of our own write, nor for a listed
object cached at the same resourceVersion. The initial list is paged (`limit`/`continue`, 100 objects a page) and
each page is transformed as it arrives, so a list of many thousand objects is never held whole in decoded form.
Pages are smaller than client-go's 500 because a decoded object weighs far more in Python: 500 listed
ModelServings with their managedFields are ~20 MB while decoded, and every informer lists at once on start-up
(a restart at 1,000 ModelBoosters peaked 37 MB higher with 500 than with 100; the extra requests cost little).
Kinds whose objects are large and mostly dropped by the transform (CRDs) page smaller still, and with
`stream_pages` have each object transformed as it is decoded, so not even one page is held whole.

The cache is updated before handlers run, so a reconcile triggered by an event sees at least that state.
Handlers are synchronous and cheap (they enqueue keys); an exception in one is logged and does not stop others.

`write_through(obj)` lets a controller put the object returned by its own write into the cache at once, so the
next reconcile does not act on stale data; the watch event that later carries the same resourceVersion is then
recognised as known and not delivered again. Events older than the cached object are still delivered (someone
else changed something we must react to) but never roll the cache back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from process.backoff import backoff_delay
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from reconciler.runtime.metrics import Metrics
from reconciler.runtime.objects import meta_text, metadata
from reconciler.runtime.outage import OutageLog
from reconciler.runtime.source import EventType, Handler, KeyMapper, Sink

logger = logging.getLogger(__name__)

Transform = Callable[[dict[str, Any]], dict[str, Any]]
DEFAULT_PAGE_SIZE = 100
IndexFunc = Callable[[dict[str, Any]], Iterable[str]]
StoreKey = tuple[str, str]


def store_key(obj: dict[str, Any]) -> StoreKey:
    meta = metadata(obj)
    return (meta.get("namespace") or "", meta.get("name") or "")


def resource_version(obj: dict[str, Any] | None) -> str:
    if obj is None:
        return ""
    return meta_text(obj, "resourceVersion")


def is_newer(candidate: str, current: str) -> bool:
    """Whether `candidate` is a later resourceVersion than `current`. Resource versions are opaque strings in
    general; kube-apiserver (etcd revisions) and our fake use integers, which we compare. Anything else counts
    as newer so that the cache always moves forward."""
    if candidate.isdigit() and current.isdigit():
        return int(candidate) > int(current)
    return candidate != current


def label_index(label: str) -> IndexFunc:
    def index(obj: dict[str, Any]) -> Iterable[str]:
        value = (metadata(obj).get("labels") or {}).get(label)
        return [value] if value is not None else []

    return index


class Informer:
    def __init__(
        self,
        client: KubeClient,
        kind: Kind,
        *,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        watch_timeout: int = 300,
        read_timeout: float | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        stream_pages: bool = False,
        backoff_base: float = 0.2,
        backoff_max: float = 4.0,
        metrics: Metrics | None = None,
        list_gate: asyncio.Semaphore | None = None,
    ) -> None:
        self.client = client
        self.kind = kind
        self._scopes: list[str | None] = list(namespaces) if namespaces and kind.namespaced else [None]
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._transform = transform
        self._indexers = dict(indexers or {})
        self._watch_timeout = watch_timeout
        self._read_timeout = read_timeout if read_timeout is not None else watch_timeout + 30.0
        self._page_size = page_size
        self._stream_pages = stream_pages and transform is not None
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._metrics = metrics
        self._list_gate = list_gate
        self._objects: dict[StoreKey, dict[str, Any]] = {}
        self._indexes: dict[str, dict[str, set[StoreKey]]] = {name: {} for name in self._indexers}
        self._handlers: list[Handler] = []
        self._synced_scopes: set[str | None] = set()
        self._synced = asyncio.Event()
        self.last_activity = time.monotonic()
        # Per scope: the resourceVersion the watch has delivered everything up to (events and bookmarks).
        self._resource_versions: dict[str | None, str] = {}
        self._outage = OutageLog(logger, f"{kind.kind} informer")
        self._recovery_handlers: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ reading
    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get((namespace, name))

    def objects(self, namespace: str | None = None) -> list[dict[str, Any]]:
        if namespace is None:
            return list(self._objects.values())
        return [obj for (ns, _), obj in self._objects.items() if ns == namespace]

    def by_index(self, index: str, value: str) -> list[dict[str, Any]]:
        keys = self._indexes[index].get(value, ())
        return [self._objects[key] for key in keys if key in self._objects]

    def __len__(self) -> int:
        return len(self._objects)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def attach(self, sink: Sink, mapper: KeyMapper) -> None:
        """As a controller's source (runtime/source.py): each event's keys, and the end of an outage."""

        def handler(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            for key in mapper(event, old, new):
                if key.name:
                    sink.enqueue(key)

        self.add_handler(handler)
        self.add_recovery_handler(sink.server_answers)

    def add_recovery_handler(self, handler: Callable[[], None]) -> None:
        """`handler()` runs when the informer reaches the API server again after failing to (an outage ended)."""
        self._recovery_handlers.append(handler)

    def _reached_server(self) -> None:
        if self._outage.succeeded():
            for handler in self._recovery_handlers:
                try:
                    handler()
                except Exception:
                    logger.exception("%s informer: recovery handler failed", self.kind)

    @property
    def name(self) -> str:
        return self.kind.kind

    # ------------------------------------------------------------------ writing
    def write_through(self, obj: dict[str, Any]) -> None:
        """Cache the object returned by our own write (create, apply, update, status patch)."""
        key = store_key(obj)
        current = self._objects.get(key)
        if current is None or is_newer(resource_version(obj), resource_version(current)):
            self._put(key, self._transformed(obj))

    def forget_deleted(self, namespace: str, name: str) -> None:
        """Our own delete succeeded: drop the object now rather than when the watch event arrives."""
        key = (namespace, name)
        if key in self._objects:
            self._remove(key)

    def _put(self, key: StoreKey, obj: dict[str, Any]) -> dict[str, Any] | None:
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        for name, func in self._indexers.items():
            for value in func(obj):
                self._indexes[name].setdefault(value, set()).add(key)
        return old

    def _remove(self, key: StoreKey) -> dict[str, Any] | None:
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def _unindex(self, key: StoreKey, obj: dict[str, Any]) -> None:
        for name, func in self._indexers.items():
            for value in func(obj):
                bucket = self._indexes[name].get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del self._indexes[name][value]

    def _notify(self, event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for handler in self._handlers:
            try:
                handler(event, old, new)
            except Exception:
                logger.exception("%s informer: event handler failed", self.kind)

    # ------------------------------------------------------------------ events
    def _apply_event(self, event: EventType, obj: dict[str, Any]) -> None:
        key = store_key(obj)
        current = self._objects.get(key)
        if event == "DELETED":
            old = self._remove(key)
            self._notify("DELETED", old if old is not None else self._transformed(obj), None)
            return
        if current is not None:
            candidate, known = resource_version(obj), resource_version(current)
            if candidate == known:
                return  # already cached, e.g. through write_through of our own write: no transform needed either
            if not is_newer(candidate, known):
                self._notify("MODIFIED", current, self._transformed(obj))  # changed before our later write: react
                return
        obj = self._transformed(obj)
        old = self._put(key, obj)
        self._notify("ADDED" if old is None else "MODIFIED", old, obj)

    def _transformed(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._transform(obj) if self._transform is not None else obj

    def _ingest(
        self, fresh: dict[StoreKey, dict[str, Any]], items: Iterable[dict[str, Any]], *, transformed: bool = False
    ) -> None:
        """Add listed items to `fresh`, transformed (unless the client did it as it decoded them); an item the
        cache holds at the same resourceVersion is kept as cached (a re-list after a watch expired mostly lists
        what we have)."""
        for item in items:
            if not isinstance(item, dict):
                continue
            key = store_key(item)
            current = self._objects.get(key)
            if current is not None and resource_version(current) == resource_version(item):
                fresh[key] = current
            else:
                fresh[key] = item if transformed else self._transformed(item)

    def _replace(self, scope: str | None, items: Iterable[dict[str, Any]]) -> None:
        fresh: dict[StoreKey, dict[str, Any]] = {}
        self._ingest(fresh, items)
        self._replace_with(scope, fresh)

    def _replace_with(self, scope: str | None, fresh: dict[StoreKey, dict[str, Any]]) -> None:
        stale = [key for key in self._objects if (scope is None or key[0] == scope) and key not in fresh]
        for key in stale:
            old = self._remove(key)
            self._notify("DELETED", old, None)
        for key, obj in fresh.items():
            current = self._objects.get(key)
            if current is obj or (current is not None and resource_version(current) == resource_version(obj)):
                continue
            old = self._put(key, obj)
            self._notify("ADDED" if old is None else "MODIFIED", old, obj)

    # ------------------------------------------------------------------ loops
    async def run(self) -> None:
        await asyncio.gather(*(self._reflect(scope) for scope in self._scopes))

    async def _gated_list(self, scope: str | None) -> str:
        """`_list` once the gate (shared by a manager's informers) lets it: on start-up every informer lists at
        once, and one list's pages at a time keep the peak memory down (the server serves them no slower)."""
        if self._list_gate is None:
            return await self._list(scope)
        async with self._list_gate:
            return await self._list(scope)

    async def _list(self, scope: str | None) -> str:
        # Each page is transformed as it arrives and then dropped: a list of 10,000 objects is never held whole
        # in its decoded form (the server pages it by `limit`/`continue`).
        fresh: dict[StoreKey, dict[str, Any]] = {}
        token: str | None = None
        while True:
            page = await self.client.list(
                self.kind,
                namespace=scope,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                limit=self._page_size,
                continue_token=token,
                each_item=self._transform if self._stream_pages else None,
            )
            self._ingest(fresh, page.items, transformed=self._stream_pages)
            token = page.continue_token
            if not token:
                break
        self._replace_with(scope, fresh)
        self._synced_scopes.add(scope)
        if len(self._synced_scopes) == len(self._scopes):
            self._synced.set()
        return page.resource_version

    async def _reflect(self, scope: str | None) -> None:
        where = scope or "all namespaces"
        version: str | None = None
        failures = 0
        while True:
            try:
                if version is None:
                    version = await self._gated_list(scope)
                    self._resource_versions[scope] = version
                    self.last_activity = time.monotonic()
                    self._reached_server()
                version = await self._watch(scope, version)
                failures = 0
            except asyncio.CancelledError:
                raise
            except ApiError as error:
                if error.gone:  # routine (the server's watch history moved on, or it restarted): DEBUG
                    logger.debug("%s informer (%s): resourceVersion too old, re-listing", self.kind, where)
                    self._count_restart("gone")
                    self._resource_versions.pop(scope, None)
                    version = None
                    continue
                if version is not None:
                    # A stream broken mid-way resumes after the last event it delivered, not from where it
                    # began: replaying thousands of events the cache holds would queue a reconcile for each.
                    version = self._resource_versions.get(scope, version)
                if error.reason == "ReadTimeout":
                    logger.warning("%s informer (%s): watch silent for too long, re-opening", self.kind, where)
                    self._count_restart("timeout")
                    continue
                failures += 1
                self._count_restart("error")
                # In [d/2, d] for the exponential d: spread, and never later than the cap.
                delay = backoff_delay(failures, base=self._backoff_base, cap=self._backoff_max, jitter=1.0) / 2
                self._outage.failed(error, detail=f"{where}; retrying in {delay:.2f}s")
                await asyncio.sleep(delay)

    async def _watch(self, scope: str | None, version: str) -> str:
        """Watch from `version` until the stream ends; return the last resourceVersion seen."""
        async for event in self.client.watch(
            self.kind,
            namespace=scope,
            resource_version=version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=self._watch_timeout,
            read_timeout=self._read_timeout,
            on_open=self._reached_server,
        ):
            self.last_activity = time.monotonic()
            if event.type == "ERROR":
                raise ApiError(
                    status=int(event.object.get("code") or 0),
                    reason=str(event.object.get("reason") or "WatchError"),
                    message=str(event.object.get("message") or "error event in watch stream"),
                    body=event.object,
                )
            if event.type != "BOOKMARK":
                self._apply_event(event.type, event.object)
            version = resource_version(event.object) or version
            self._resource_versions[scope] = version
        self._count_restart("closed")
        return version

    def _count_restart(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.watch_restarts.labels(kind=self.kind.kind, reason=reason).inc()
