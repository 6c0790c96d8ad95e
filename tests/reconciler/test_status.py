"""ModelBooster status (docs/design/reconciler.md §8): conditions, observedGeneration, no flapping, Failed cleared."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.modelbooster.status import (
    REASON_ABNORMAL,
    REASON_CHILD_TERMINATING,
    REASON_IMMUTABLE,
    REASON_LORA,
    REASON_NOT_OWNED,
    REASON_REFUSED,
    BackendState,
    Findings,
    Outcome,
    booster_status,
    outcome,
)
from reconciler.runtime.conditions import WantedCondition, merge_conditions, status_differs

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:05:00Z"


def conditions_by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_first_status_after_all_children_applied() -> None:
    status = booster_status(
        None,
        generation=1,
        outcome=Outcome(applied_all=True),
        backends=[BackendState("a", available=False, replicas=0), BackendState("b", available=False, replicas=0)],
        now=T0,
    )
    assert [c["type"] for c in status["conditions"]] == ["Initialized", "Active", "Failed", "UpToDate"]
    by_type = conditions_by_type(status)
    assert by_type["Initialized"] == {
        "type": "Initialized",
        "status": "True",
        "reason": "ModelInitialized",
        "message": "ModelBooster initialized",
        "lastTransitionTime": T0,
        "observedGeneration": 1,
    }
    assert by_type["Active"]["status"] == "False"
    assert by_type["Active"]["reason"] == "ModelProcessing"
    assert by_type["Active"]["message"] == "ModelBooster not ready yet: backends not available: a, b"
    assert by_type["Failed"]["status"] == "False"
    assert status["observedGeneration"] == 1
    assert status["backendStatuses"] == [{"name": "a", "replicas": 0}, {"name": "b", "replicas": 0}]
    assert status["backendCount"] == 2


def test_backend_count_follows_the_backends_and_a_change_is_written() -> None:
    three = [BackendState(name, available=True, replicas=1) for name in ("a", "b", "c")]
    first = booster_status(None, generation=1, outcome=Outcome(applied_all=True), backends=three, now=T0)
    assert first["backendCount"] == 3
    # One backend removed: the count drops with it, so the status must be written again.
    fewer = booster_status(first, generation=2, outcome=Outcome(applied_all=True), backends=three[:2], now=T1)
    assert fewer["backendCount"] == 2
    assert status_differs({**first, "observedGeneration": 2, "backendStatuses": fewer["backendStatuses"]}, fewer)
    # A spec the reconciler cannot read any backend from counts zero, never a missing or negative count.
    invalid = booster_status(
        first, generation=3, outcome=Outcome(applied_all=False, failure="bad"), backends=[], now=T1
    )
    assert invalid["backendCount"] == 0


def test_a_status_written_before_backend_count_existed_is_written_once() -> None:
    backends = [BackendState("a", available=False, replicas=0)]
    desired = booster_status(None, generation=1, outcome=Outcome(applied_all=True), backends=backends, now=T0)
    older = {key: value for key, value in desired.items() if key != "backendCount"}
    assert status_differs(older, desired)
    again = booster_status(desired, generation=1, outcome=Outcome(applied_all=True), backends=backends, now=T1)
    assert not status_differs(desired, again)


def test_active_when_every_backend_is_available() -> None:
    status = booster_status(
        None,
        generation=3,
        outcome=Outcome(applied_all=True),
        backends=[BackendState("a", available=True, replicas=2)],
        now=T0,
    )
    active = conditions_by_type(status)["Active"]
    assert active["status"] == "True"
    assert active["reason"] == "ModelAvailable"
    assert active["message"] == "ModelBooster is ready"
    assert active["observedGeneration"] == 3


def test_last_transition_time_moves_only_when_status_changes() -> None:
    first = booster_status(
        None, generation=1, outcome=Outcome(applied_all=True), backends=[BackendState("a", False, 0)], now=T0
    )
    # Same statuses later (message may differ): times kept, so nothing to write.
    again = booster_status(
        first, generation=1, outcome=Outcome(applied_all=True), backends=[BackendState("a", False, 0)], now=T1
    )
    assert again == first
    assert not status_differs(first, again)
    # Active flips: only Active's time moves.
    ready = booster_status(
        first, generation=1, outcome=Outcome(applied_all=True), backends=[BackendState("a", True, 1)], now=T1
    )
    by_type = conditions_by_type(ready)
    assert by_type["Active"]["lastTransitionTime"] == T1
    assert by_type["Initialized"]["lastTransitionTime"] == T0
    assert by_type["Failed"]["lastTransitionTime"] == T0
    assert status_differs(first, ready)


def test_failed_is_set_with_the_message_and_cleared_on_recovery() -> None:
    ok = booster_status(None, generation=1, outcome=Outcome(applied_all=True), backends=[], now=T0)
    failed = booster_status(
        ok,
        generation=2,
        outcome=Outcome(applied_all=False, failure="validation failed:\n  - spec.x: bad", failure_reason="InvalidSpec"),
        backends=[],
        now=T1,
    )
    by_type = conditions_by_type(failed)
    assert by_type["Failed"]["status"] == "True"
    assert by_type["Failed"]["reason"] == "InvalidSpec"
    assert by_type["Failed"]["message"] == "validation failed:\n  - spec.x: bad"
    assert by_type["Failed"]["observedGeneration"] == 2
    # Initialized stays True once reached, even while a later generation fails.
    assert by_type["Initialized"]["status"] == "True"
    recovered = booster_status(failed, generation=3, outcome=Outcome(applied_all=True), backends=[], now="later")
    assert conditions_by_type(recovered)["Failed"]["status"] == "False"
    assert conditions_by_type(recovered)["Failed"]["lastTransitionTime"] == "later"


def test_initialized_false_until_children_are_applied() -> None:
    status = booster_status(None, generation=1, outcome=Outcome(applied_all=False, failure="boom"), backends=[], now=T0)
    by_type = conditions_by_type(status)
    assert by_type["Initialized"]["status"] == "False"
    assert by_type["Failed"]["reason"] == "ModelAbnormal"


def test_foreign_conditions_are_kept_after_ours() -> None:
    existing = [{"type": "Custom", "status": "True", "reason": "X", "message": "", "lastTransitionTime": T0}]
    merged = merge_conditions(existing, [WantedCondition("Active", "False", "R", "m")], generation=None, now=T1)
    assert [c["type"] for c in merged] == ["Active", "Custom"]
    assert "observedGeneration" not in merged[0]


def test_status_differs_only_on_fields_we_own() -> None:
    desired = {"observedGeneration": 2, "conditions": [], "backendStatuses": []}
    assert not status_differs({**desired, "somethingElse": 1}, desired)
    assert status_differs({**desired, "observedGeneration": 1}, desired)
    assert status_differs(None, desired)


def test_status_differs_by_json_equality() -> None:
    # A stored `true` is not the integer 1 (Python's bool is an int): writing 1 would change the status.
    assert status_differs({"done": True, "replicas": 1}, {"done": 1, "replicas": 1})
    assert not status_differs({"done": True, "replicas": 1.0}, {"done": True, "replicas": 1})


# Each kind of finding, the reason it gives, and whether the children count as applied with it.
KINDS = [
    ("not_owned", REASON_NOT_OWNED, False),
    ("terminating", REASON_CHILD_TERMINATING, False),
    ("failures", REASON_ABNORMAL, False),
    ("refused", REASON_REFUSED, False),
    ("held_back", REASON_IMMUTABLE, True),
    ("lora", REASON_LORA, True),
]


def test_no_finding_is_a_success_that_counts_the_older_renderings() -> None:
    result = outcome(Findings(), older=("m-a",), servings=2, rollout_hint="ask")
    assert result == Outcome(applied_all=True, failure=None, older=("m-a",), servings=2, rollout_hint="ask")


@pytest.mark.parametrize(("field", "reason", "applied"), KINDS)
def test_each_kind_of_finding_names_its_reason(field: str, reason: str, applied: bool) -> None:
    found: dict[str, Any] = {field: ("first", "second")}
    result = outcome(Findings(**found), older=(), servings=0, rollout_hint="")
    assert (result.failure_reason, result.failure, result.applied_all) == (reason, "first; second", applied)


def test_the_first_kind_found_wins_in_the_order_of_the_table() -> None:
    found: dict[str, Any] = {field: (field,) for field, _, _ in KINDS}
    for field, reason, _ in KINDS:
        result = outcome(Findings(**found), older=(), servings=0, rollout_hint="")
        assert (result.failure_reason, result.failure) == (reason, field)
        del found[field]


def test_findings_add_up_and_say_whether_to_retry() -> None:
    down = Findings(failures=("applying x failed: 503",), unavailable=1)
    refused = Findings(refused=("refused",))
    assert down.unavailable_only
    assert not down.ok
    assert down.retry
    assert not refused.ok
    assert not refused.retry
    assert not Findings(held_back=("held",)).retry
    assert Findings(held_back=("held",)).ok
    both = down + refused + Findings(lora=("pod p",))
    assert both.failures == down.failures
    assert both.refused == ("refused",)
    assert both.unavailable == 1
    assert not both.unavailable_only
    assert both.retry_message == "applying x failed: 503; pod p"
