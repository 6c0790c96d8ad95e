"""The Events a reconcile of a ModelBooster posts, as texts (docs/design/reconciler.md §9): what it created,
updated, adopted, deleted and took over, and each finding, so that `kubectl describe` tells the story."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

from reconciler.modelbooster.status import REASON_IMMUTABLE, REASON_REFUSED, Findings
from reconciler.runtime.apply import Desired
from reconciler.runtime.events import EventKind


class Event(NamedTuple):
    """One Event to post on the ModelBooster."""

    type: EventKind
    reason: str
    message: str


@dataclass(frozen=True)
class Written:
    """What one reconcile wrote, for its Events."""

    created: tuple[Desired, ...] = ()
    updated: tuple[Desired, ...] = ()
    adopted: tuple[Desired, ...] = ()
    deleted: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()  # "<child>: <paths> (set by <manager>)"
    kept: tuple[str, ...] = ()  # the same, for fields someone keeps re-adding
    taken_over: tuple[str, ...] = ()

    def __add__(self, other: Written) -> Written:
        return Written(**{one.name: getattr(self, one.name) + getattr(other, one.name) for one in fields(self)})


def field_not_served(message: str) -> Event:
    return Event("Warning", "FieldNotServed", message)


def reconciled(written: Written, findings: Findings) -> list[Event]:
    """The Events of one reconcile that got as far as writing children (LoRA calls post their own)."""
    events = [
        Event("Normal", reason, _summary(reason, items))
        for reason, items in (
            ("Created", [child.ref() for child in written.created]),
            ("Updated", [child.ref() for child in written.updated]),
            ("Adopted", [child.ref() for child in written.adopted]),
            ("Deleted", written.deleted),
        )
        if items
    ]
    if written.removed:
        message = "Removed what others added to children: " + "; ".join(written.removed)
        events.append(Event("Warning", "ForeignFieldsRemoved", message))
    if written.kept:
        message = (
            "Left as they are, since someone re-added them after each of 3 removals within 10 minutes (until "
            "the ModelBooster changes; `kubectl get <child> --show-managed-fields -o yaml` shows who): "
            + "; ".join(written.kept)
        )
        events.append(Event("Warning", "ForeignFieldsKept", message))
    events += _each("OwnershipConflict", findings.not_owned)
    events += _each("ChildTerminating", findings.terminating)
    if written.taken_over:
        message = (
            "Took over as they run, keeping their pod templates (no pod restarts; they move to the current "
            "rendering with the next change of the spec or a rollout request): " + ", ".join(written.taken_over)
        )
        events.append(Event("Normal", "TakenOver", message))
    events += _each(REASON_IMMUTABLE, findings.held_back)
    events += _each(REASON_REFUSED, findings.refused)
    events += _each("ApplyFailed", findings.failures)
    return events


def _each(reason: str, messages: Sequence[str]) -> list[Event]:
    return [Event("Warning", reason, message) for message in messages]


def _summary(verb: str, items: Iterable[str]) -> str:
    return f"{verb} {', '.join(items)}"
