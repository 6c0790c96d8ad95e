"""Watch: per-resource event history, live watchers, selector transitions and `410 Gone`.

Mirrors kube-apiserver's watch cache: a watch from resourceVersion N gets every event after N while N is
inside the retained window, otherwise an ERROR event carrying a `410 Expired` Status. A watcher whose
selector stops matching an object gets DELETED, one that starts matching gets ADDED.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from tests.fakeapi import errors

Obj = dict[str, Any]


@dataclass(frozen=True)
class StoreEvent:
    """A change as stored: `obj` is the new state (the last state, with the deletion's RV, for DELETED)."""

    type: str
    rv: int
    obj: Obj
    old: Obj | None


class _Close:
    def __init__(self, abort: bool) -> None:
        self.abort = abort


CLOSE: Final = _Close(abort=False)
ABORT: Final = _Close(abort=True)

Matcher = Callable[[Obj], bool]


@dataclass(eq=False)
class Watcher:
    storage_key: str
    matches: Matcher
    queue: asyncio.Queue[StoreEvent | _Close] = field(default_factory=asyncio.Queue)
    stalled: bool = False
    closing: _Close | None = None
    id: int = 0
    after_rv: int = 0  # a watch from a future resourceVersion sees only the events after it

    def translate(self, event: StoreEvent) -> tuple[str, Obj] | None:
        """The event this watcher sees, if any (selector transitions like the cacher's)."""
        if event.rv <= self.after_rv:
            return None
        if event.type == "ADDED":
            return ("ADDED", event.obj) if self.matches(event.obj) else None
        if event.type == "DELETED":
            previous = event.old if event.old is not None else event.obj
            return ("DELETED", event.obj) if self.matches(previous) else None
        now = self.matches(event.obj)
        before = event.old is not None and self.matches(event.old)
        if now and before:
            return ("MODIFIED", event.obj)
        if now:
            return ("ADDED", event.obj)
        if before and event.old is not None:
            gone = dict(event.old)
            gone["metadata"] = {**event.old.get("metadata", {}), "resourceVersion": str(event.rv)}
            return ("DELETED", gone)
        return None


class _History:
    def __init__(self, capacity: int) -> None:
        self.events: deque[StoreEvent] = deque()
        self.capacity = capacity
        self.floor = 0  # every event with rv > floor is retained

    def append(self, event: StoreEvent) -> None:
        self.events.append(event)
        while len(self.events) > self.capacity:
            self.floor = self.events.popleft().rv


class WatchHub:
    """Event history per resource and the watchers listening to it."""

    def __init__(self, *, history_size: int) -> None:
        self.history_size = history_size
        self._histories: dict[str, _History] = {}
        self._watchers: dict[str, set[Watcher]] = {}
        self._next_id = 0
        # Called synchronously for every change (the garbage collector and friends).
        self.listeners: list[Callable[[str, StoreEvent], None]] = []

    def _history(self, storage_key: str) -> _History:
        history = self._histories.get(storage_key)
        if history is None:
            history = self._histories[storage_key] = _History(self.history_size)
        return history

    def publish(self, storage_key: str, event: StoreEvent) -> None:
        self._history(storage_key).append(event)
        for watcher in self._watchers.get(storage_key, ()):
            watcher.queue.put_nowait(event)
        for listener in self.listeners:
            listener(storage_key, event)

    def subscribe(self, storage_key: str, matches: Matcher) -> Watcher:
        self._next_id += 1
        watcher = Watcher(storage_key=storage_key, matches=matches, id=self._next_id)
        self._watchers.setdefault(storage_key, set()).add(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        self._watchers.get(watcher.storage_key, set()).discard(watcher)

    def since(self, storage_key: str, rv: int) -> list[StoreEvent]:
        """Events after `rv`, or an `Expired` error when `rv` is older than the retained window."""
        history = self._history(storage_key)
        if rv < history.floor:
            raise errors.expired(f"too old resource version: {rv} ({history.floor})")
        return [event for event in history.events if event.rv > rv]

    def expire(self, current_rv: int) -> None:
        """Forget all history, so any watch from an older resourceVersion gets 410."""
        for history in self._histories.values():
            history.events.clear()
            history.floor = current_rv

    def set_history_size(self, size: int) -> None:
        self.history_size = size
        for history in self._histories.values():
            history.capacity = size
            while len(history.events) > size:
                history.floor = history.events.popleft().rv

    def new_resource(self, storage_key: str, current_rv: int) -> None:
        """A resource type starts existing (a CRD was created): nothing before now can be replayed."""
        history = self._history(storage_key)
        if not history.events:
            history.floor = max(history.floor, current_rv)

    def forget(self, storage_key: str, current_rv: int) -> None:
        """A resource type stops existing (its CRD is gone): end its watches and drop its history."""
        self.close_all(storage_key=storage_key)
        history = self._history(storage_key)
        history.events.clear()
        history.floor = current_rv

    def watchers(self, storage_key: str | None = None) -> list[Watcher]:
        if storage_key is not None:
            return list(self._watchers.get(storage_key, ()))
        return [w for group in self._watchers.values() for w in group]

    def close_all(self, *, storage_key: str | None = None, abort: bool = False) -> int:
        closing = self.watchers(storage_key)
        for watcher in closing:
            watcher.closing = ABORT if abort else CLOSE
            watcher.queue.put_nowait(watcher.closing)
        return len(closing)

    def stall_all(self, *, storage_key: str | None = None, stalled: bool = True) -> int:
        chosen = self.watchers(storage_key)
        for watcher in chosen:
            watcher.stalled = stalled
        return len(chosen)
