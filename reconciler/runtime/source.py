"""What wakes a controller: sources feeding `Controller.watch` (controller-runtime's `source.Kind` and
`source.Channel`).

A source is attached to a controller once, when the controller is wired, and from then on turns what happens
into keys on the controller's queue. Nothing is wired after construction: a collaborator that has something to
say to a controller (a watch on an object blocking a child, a settings change) is a source of its own, handed
to `Controller.watch` like an informer.

- an `Informer` (source.Kind): each event of a kind, mapped to keys by a `KeyMapper`;
- `Channel` (source.Channel): keys sent by code — `send(key)` wakes one object, `broadcast()` every object of the
  controller's primary kind (a setting that shapes all of them changed);
- any other class with `attach` and `wait_synced` (e.g. the per-kind informers of kinds that come and go).

A source's `wait_synced` tells when what it reports is a complete picture: a controller starts its workers only
once all of its sources have synced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, NamedTuple, Protocol

from reconciler.runtime.objects import metadata

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
# What an object source calls per event: (event type, old object or None, new object or None).
Handler = Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], None]


class ObjectKey(NamedTuple):
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def of(cls, obj: dict[str, Any]) -> ObjectKey:
        meta = metadata(obj)
        return cls(meta.get("namespace") or "", meta.get("name") or "")


# (event type, old object or None, new object or None) -> keys to enqueue
KeyMapper = Callable[[EventType, dict[str, Any] | None, dict[str, Any] | None], Iterable[ObjectKey]]


def map_to_self(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[ObjectKey]:
    obj = new if new is not None else old
    return [ObjectKey.of(obj)] if obj is not None else []


class Sink(Protocol):
    """The side of a controller a source feeds."""

    def enqueue(self, key: ObjectKey) -> None: ...

    def enqueue_all(self) -> None:
        """Every object of the controller's primary kind needs another look."""

    def server_answers(self) -> None:
        """The API server answers again after an outage (runtime/outage.py): retry what failed for it now."""


class Source(Protocol):
    def attach(self, sink: Sink, mapper: KeyMapper) -> None:
        """From now on, what happens reaches `sink` (through `mapper`, where the source reports objects)."""

    async def wait_synced(self) -> None: ...


class Channel:
    """Keys sent by code (controller-runtime's source.Channel). Always synced; before it is attached, what is
    sent is dropped (nothing is running yet that could need it: the first reconcile of every object follows)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._sinks: list[Sink] = []

    def attach(self, sink: Sink, mapper: KeyMapper) -> None:
        del mapper  # a channel carries keys already
        if sink not in self._sinks:
            self._sinks.append(sink)

    async def wait_synced(self) -> None:
        return None

    def send(self, key: ObjectKey) -> None:
        for sink in self._sinks:
            sink.enqueue(key)

    def broadcast(self) -> None:
        for sink in self._sinks:
            sink.enqueue_all()
