"""Which Optimizers an event wakes: only spec changes count (a new generation), as in the reference, so status
writes (ours included) wake nobody; an input change wakes its namespace's Optimizers that asked for a run, or
all of them when every change is mirrored into a stateful remote optimizer (docs/design/inferno.md §8)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.runtime.informer import Informer
from reconciler.runtime.objects import meta_text, metadata
from reconciler.runtime.source import EventType, KeyMapper, ObjectKey
from shared.api import inferno as api
from shared.durations import DurationError, parse_duration


def optimize_requested(optimizer: Mapping[str, Any]) -> bool:
    return (optimizer.get("spec") or {}).get("optimize") is True


def generation(obj: Mapping[str, Any] | None) -> Any:
    return metadata(obj).get("generation")


def spec_changed(event: EventType, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    """The reference's event filter: creations and deletions pass, updates only with a new generation."""
    if event != "MODIFIED":
        return True
    old_generation, new_generation = generation(old), generation(new)
    if old_generation is None or new_generation is None:
        return (old or {}).get("spec") != (new or {}).get("spec")
    return bool(old_generation != new_generation)


def optimizer_interval(optimizer: Mapping[str, Any]) -> float | None:
    """`spec.interval` in seconds, or None when absent or unusable (the run reports an unusable one)."""
    text = (optimizer.get("spec") or {}).get("interval")
    if not isinstance(text, str):
        return None
    try:
        nanos = parse_duration(text)
    except DurationError:
        return None
    return nanos / 1e9 if nanos >= api.MIN_INTERVAL_NANOS else None


def map_optimizer(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[ObjectKey]:
    """An Optimizer wakes itself, deleted too: the run that finds it gone drops what was kept for it."""
    obj = new if new is not None else old
    if obj is None or not spec_changed(event, old, new):
        return []
    return [ObjectKey.of(obj)]


def map_inputs_to_optimizers(optimizers: Informer, *, every_optimizer: bool) -> KeyMapper:
    """An input change wakes its namespace's Optimizers: those waiting for a run, or all of them when each
    change has to be mirrored."""

    def mapper(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[ObjectKey]:
        obj = new if new is not None else old
        if obj is None or not spec_changed(event, old, new):
            return []
        namespace = meta_text(obj, "namespace")
        return [
            ObjectKey.of(optimizer)
            for optimizer in optimizers.objects(namespace)
            if every_optimizer or optimize_requested(optimizer)
        ]

    return mapper
