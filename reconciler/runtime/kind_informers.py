"""Informers for custom kinds that come and go with their CRD: running while the kind is served, stopped when not.

`KindInformers(manager, served, kinds, make=...)` watches `served` (reconciler/runtime/discovery.py): when a
kind's CRD is served at the kind's version, a fresh informer for it is made with `make(kind)` and run by the
manager; when the CRD goes (deleted, being deleted, version no longer served) the informer is stopped and its
cache dropped. A kind that is not served therefore never has an informer retrying a 404 with growing backoff,
and nothing (readiness, leadership, other controllers) waits on it.

`get(kind)` answers the informer only once it has synced (its cache is a complete picture); `state(kind)` says
`served`, `syncing` or `not served`. Handlers added with `add_handler` are attached to every informer made, so
events of a kind that appears later reach them; `on_change(callback)` hears `callback(kind)` when a kind's
informer has synced or has been stopped (e.g. to reconcile everything that needed it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Literal

from reconciler.runtime.discovery import CrdDiscovery, ServedCrd
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.manager import Manager
from reconciler.runtime.source import Handler

logger = logging.getLogger(__name__)

KindState = Literal["served", "syncing", "not served"]


class KindInformers:
    def __init__(
        self,
        manager: Manager,
        served: CrdDiscovery,
        kinds: Sequence[Kind],
        *,
        make: Callable[[Kind], Informer],
    ) -> None:
        self._manager = manager
        self._served = served
        self.kinds = tuple(kinds)
        self._make = make
        self._running: dict[Kind, Informer] = {}
        self._watchers: dict[Kind, asyncio.Task[None]] = {}
        self._handlers: list[Handler] = []
        self._callbacks: list[Callable[[Kind], None]] = []
        self._stopping: set[asyncio.Task[None]] = set()
        served.follow(self.kinds)
        served.subscribe(self._on_crd_change)
        manager.add_cleanup(self._close)

    # ---------------------------------------------------------------- reading
    def get(self, kind: Kind) -> Informer | None:
        informer = self._running.get(kind)
        return informer if informer is not None and informer.has_synced else None

    def state(self, kind: Kind) -> KindState:
        informer = self._running.get(kind)
        if informer is None:
            return "not served"
        return "served" if informer.has_synced else "syncing"

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)
        for informer in self._running.values():
            informer.add_handler(handler)

    def on_change(self, callback: Callable[[Kind], None]) -> None:
        self._callbacks.append(callback)

    # ---------------------------------------------------------------- events
    def _on_crd_change(self, old: ServedCrd | None, new: ServedCrd | None) -> None:
        for kind in self.kinds:
            crd = new if new is not None else old
            if crd is None or (crd.group, crd.plural) != (kind.group, kind.plural):
                continue
            wanted = new is not None and new.version(kind.version) is not None
            if wanted and kind not in self._running:
                self._start(kind)
            elif not wanted and kind in self._running:
                self._stop(kind)

    def _start(self, kind: Kind) -> None:
        informer = self._make(kind)
        for handler in self._handlers:
            informer.add_handler(handler)
        self._running[kind] = informer
        self._manager.start_informer(informer)
        self._watchers[kind] = asyncio.create_task(self._announce_sync(kind, informer), name=f"synced-{kind}")
        logger.info("%s is served: watching it", kind)

    async def _announce_sync(self, kind: Kind, informer: Informer) -> None:
        await informer.wait_synced()
        if self._running.get(kind) is informer:
            self._changed(kind)

    def _stop(self, kind: Kind) -> None:
        informer = self._running.pop(kind)
        watcher = self._watchers.pop(kind, None)
        if watcher is not None:
            watcher.cancel()
        task = asyncio.create_task(self._manager.stop_informer(informer), name=f"stop-{kind}")
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        logger.info("%s is no longer served: stopped watching it", kind)
        self._changed(kind)

    async def _close(self) -> None:
        tasks = [*self._watchers.values(), *self._stopping]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _changed(self, kind: Kind) -> None:
        for callback in self._callbacks:
            try:
                callback(kind)
            except Exception:
                logger.exception("served kinds: change callback failed")
