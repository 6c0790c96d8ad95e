"""The Events of one reconcile of a ModelBooster (reconciler/modelbooster/events.py, docs/design/reconciler.md §9):
one Normal event per verb naming the children, one Warning per finding; LoRA failures post their own."""

from __future__ import annotations

from reconciler.modelbooster.events import Event, Written, reconciled
from reconciler.modelbooster.kinds import MODEL_ROUTE, MODEL_SERVING
from reconciler.modelbooster.status import Findings
from reconciler.runtime.apply import Desired


def child(name: str, kind: object = MODEL_SERVING) -> Desired:
    return Desired(kind=kind, obj={"metadata": {"name": name, "namespace": "ns"}})  # type: ignore[arg-type]


def test_nothing_written_and_nothing_found_posts_nothing() -> None:
    assert reconciled(Written(), Findings(lora=("reported by the LoRA calls",))) == []


def test_each_verb_is_one_event_naming_its_children_in_order() -> None:
    written = Written(
        created=(child("m-a"), child("m", MODEL_ROUTE)),
        updated=(child("m-b"),),
        deleted=("ModelServing m-c",),
        taken_over=("ModelServing ns/m-d",),
    )
    events = reconciled(written, Findings())
    assert [(e.type, e.reason) for e in events] == [
        ("Normal", "Created"), ("Normal", "Updated"), ("Normal", "Deleted"), ("Normal", "TakenOver"),
    ]  # fmt: skip
    assert events[0].message == "Created ModelServing ns/m-a, ModelRoute ns/m"
    assert events[2].message == "Deleted ModelServing m-c"
    assert events[3].message.endswith(": ModelServing ns/m-d")


def test_foreign_fields_and_each_finding_are_warnings() -> None:
    written = Written(removed=("ModelServing ns/m-a: spec.x (set by kubectl)",), kept=("ModelServing ns/m-a: y",))
    findings = Findings(
        not_owned=("conflict",), terminating=("terminating",), failures=("failed",), refused=("refused",),
        held_back=("held",),
    )  # fmt: skip
    events = reconciled(written, findings)
    assert all(event.type == "Warning" for event in events)
    assert [event.reason for event in events] == [
        "ForeignFieldsRemoved", "ForeignFieldsKept", "OwnershipConflict", "ChildTerminating", "ImmutableField",
        "ChildRefused", "ApplyFailed",
    ]  # fmt: skip
    removed = "Removed what others added to children: ModelServing ns/m-a: spec.x (set by kubectl)"
    assert events[0] == Event("Warning", "ForeignFieldsRemoved", removed)
    assert [event.message for event in events[2:]] == ["conflict", "terminating", "held", "refused", "failed"]
