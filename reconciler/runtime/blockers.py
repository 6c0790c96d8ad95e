"""Noticing promptly that an object blocking a child has changed or gone (docs/design/reconciler.md §4).

A same-named object that a ModelBooster may not take over is usually outside the child caches: they hold
only objects with our label. So nothing would tell the ModelBooster when its owner deletes it, or gives it our
labels, and the retry would wait out its backoff (up to 1,000 s) or the resync. Instead, each blocking object
gets a watch of its own, selected by name (`fieldSelector=metadata.name=...`) from the resourceVersion it was
read at; its first change wakes the owner (this is a source of the owner's controller: `Controller.watch`),
whose reconcile then either proceeds or watches it again.

Watches are bounded in number (`limit`: past it, the backoff alone applies), re-opened when the server ends
them, retried with jittered backoff on errors, and stopped with the process. After `410 Gone` the owner is woken
anyway, since changes may have been missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from process.backoff import backoff_delay
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text, metadata
from reconciler.runtime.outage import is_outage
from reconciler.runtime.source import Channel, KeyMapper, ObjectKey, Sink

logger = logging.getLogger(__name__)

BlockerKey = tuple[Kind, str, str]


class BlockerWatches:
    def __init__(
        self,
        client: KubeClient,
        *,
        limit: int = 512,
        watch_timeout: int = 300,
        backoff_base: float = 0.2,
        backoff_max: float = 5.0,
    ) -> None:
        self.client = client
        self._limit = limit
        self._watch_timeout = watch_timeout
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._tasks: dict[BlockerKey, asyncio.Task[None]] = {}
        # Per blocking object, the owners to wake: sent through this source's channel to the controller.
        self._wakers: dict[BlockerKey, list[ObjectKey]] = {}
        self._channel = Channel("blockers")

    def __len__(self) -> int:
        return len(self._tasks)

    # ---------------------------------------------------------------- as a source (runtime/source.py)
    def attach(self, sink: Sink, mapper: KeyMapper) -> None:
        self._channel.attach(sink, mapper)

    async def wait_synced(self) -> None:
        return None

    def watch(self, kind: Kind, namespace: str, name: str, *, resource_version: str, owner: ObjectKey) -> None:
        """Wake `owner` once the object changes or goes (after `resource_version`)."""
        key = (kind, namespace, name)
        wakers = self._wakers.setdefault(key, [])
        if owner not in wakers:
            wakers.append(owner)
        if key in self._tasks:
            return
        if len(self._tasks) >= self._limit:
            self._wakers.pop(key, None)
            return
        self._tasks[key] = asyncio.get_running_loop().create_task(
            self._run(key, resource_version), name=f"blocker-{kind.kind}-{namespace}/{name}"
        )

    def _fire(self, key: BlockerKey) -> None:
        for owner in self._wakers.pop(key, []):
            self._channel.send(owner)

    async def _run(self, key: BlockerKey, version: str) -> None:
        kind, namespace, name = key
        failures = 0
        try:
            while True:
                try:
                    if not version:
                        version = await self._read(key)
                        if not version:
                            self._fire(key)  # gone already
                            return
                    async for event in self.client.watch(
                        kind,
                        namespace=namespace,
                        resource_version=version,
                        field_selector=f"metadata.name={name}",
                        timeout_seconds=self._watch_timeout,
                    ):
                        if event.type == "ERROR":
                            raise ApiError(status=int(event.object.get("code") or 0),
                                           reason=str(event.object.get("reason") or "WatchError"),
                                           message=str(event.object.get("message") or "error event"))  # fmt: skip
                        if event.type == "BOOKMARK":
                            version = str(metadata(event.object).get("resourceVersion") or version)
                            continue
                        self._fire(key)
                        return
                    failures = 0
                except ApiError as error:
                    if error.gone:  # changes may have been missed: let the owner look
                        self._fire(key)
                        return
                    failures += 1
                    if not is_outage(error):
                        logger.warning("watching blocking %s %s/%s failed: %s", kind.kind, namespace, name, error)
                    await asyncio.sleep(
                        backoff_delay(failures, base=self._backoff_base, cap=self._backoff_max, jitter=1.0)
                    )
        finally:
            self._tasks.pop(key, None)

    async def _read(self, key: BlockerKey) -> str:
        """The object's current resourceVersion, or "" when it is gone."""
        kind, namespace, name = key
        try:
            obj = await self.client.get(kind, namespace, name)
        except ApiError as error:
            if error.not_found:
                return ""
            raise
        return meta_text(obj, "resourceVersion")

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._wakers.clear()
