"""What writing a ModelBooster's children came to, sorted (reconciler/modelbooster/apply.py,
docs/design/reconciler.md §3, §4, §15, §16): each answer lands in the one place the reconcile reads it from."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.modelbooster.apply import Result, sorted_results
from reconciler.modelbooster.kinds import MODEL_ROUTE, MODEL_SERVER, MODEL_SERVING
from reconciler.runtime.apply import ChildOutcome, ChildTerminating, Desired, NotControlledError
from reconciler.runtime.client import ApiError
from reconciler.runtime.kinds import Kind

NS = "ns"


def child(kind: Kind, name: str) -> Desired:
    return Desired(kind=kind, obj={"apiVersion": kind.api_version, "kind": kind.kind,
                                   "metadata": {"name": name, "namespace": NS}})  # fmt: skip


def live(name: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": "other", **meta}}


SERVING, SERVER, ROUTE = child(MODEL_SERVING, "m-a"), child(MODEL_SERVER, "m-a"), child(MODEL_ROUTE, "m")


def test_written_children_are_counted_and_reported_by_what_happened() -> None:
    results: list[Result] = [
        ChildOutcome(SERVING, "created"),
        ChildOutcome(SERVER, "updated", removed=("spec.x (set by kubectl)",)),
        ChildOutcome(ROUTE, "unchanged", kept=("spec.y (set by policy)",)),
    ]
    applied = sorted_results([SERVING, SERVER, ROUTE], results, owner="m", taken_over=())
    assert list(applied.servings) == ["m-a"]
    assert applied.written.created == (SERVING,)
    assert applied.written.updated == ()  # the removal's own Event says what was written
    assert applied.written.removed == (f"{SERVER.ref()}: spec.x (set by kubectl)",)
    assert applied.written.kept == (f"{ROUTE.ref()}: spec.y (set by policy)",)
    assert applied.actions == (("ModelServing", "created"), ("ModelServer", "updated"))
    assert applied.findings.ok


def test_an_update_of_a_child_taken_over_is_no_update_event() -> None:
    results: list[Result] = [ChildOutcome(SERVING, "updated"), ChildOutcome(SERVER, "replaced")]
    applied = sorted_results([SERVING, SERVER], results, owner="m", taken_over=(SERVING.ref(),))
    assert applied.written.updated == (SERVER,)
    assert applied.written.taken_over == (SERVING.ref(),)


def test_errors_become_findings_and_blockers() -> None:
    blocked = NotControlledError(SERVER, live("m-a"), "ModelBooster ns/m")
    terminating = ChildTerminating(ROUTE, live("m", deletionTimestamp="2026-01-01T00:00:00Z"))
    results: list[Result] = [ApiError(status=503, reason="ServiceUnavailable", message="down"), blocked, terminating]
    applied = sorted_results([SERVING, SERVER, ROUTE], results, owner="m", taken_over=())
    assert applied.servings == {}
    assert applied.blocked == (blocked,)
    assert len(applied.findings.not_owned) == 1
    assert "m-a" in applied.findings.not_owned[0]
    assert applied.findings.terminating == (str(terminating),)
    assert applied.findings.failures == (f"applying {SERVING.ref()} failed: 503 ServiceUnavailable: down",)
    assert applied.findings.unavailable == 1
    assert not applied.findings.unavailable_only  # the conflict and the terminating child are a user's to see


def test_a_refusal_is_not_retried_and_a_terminating_namespace_is_named() -> None:
    refused = ApiError(status=422, reason="Invalid", message="spec.x: Invalid value")
    cause = {"details": {"causes": [{"reason": "NamespaceTerminating"}]}}
    gone = ApiError(status=403, reason="Forbidden", message="being terminated", body=cause)
    applied = sorted_results([SERVING, SERVER], [refused, gone], owner="m", taken_over=())
    assert applied.findings.refused == (
        f"the API server refused {SERVING.ref()}: spec.x: Invalid value; this is not retried until the "
        "ModelBooster or the child changes",
    )
    assert not applied.findings.retry
    assert applied.namespace_terminating == (NS,)


def test_an_error_that_is_no_answer_of_the_server_is_raised() -> None:
    with pytest.raises(KeyError):
        sorted_results([SERVING], [KeyError("bug")], owner="m", taken_over=())
