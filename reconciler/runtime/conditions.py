"""Status conditions with metav1.Condition semantics, and status change detection, for any controller.

- `lastTransitionTime` changes only when a condition's status changes, so conditions never flap;
- conditions of types someone else added are kept, after ours;
- a status is written only if it differs from the stored one in a field we own, so a no-op reconcile writes
  nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from reconciler.runtime.objects import json_equal

ConditionStatus = Literal["True", "False", "Unknown"]

MAX_MESSAGE = 32768  # metav1.Condition.message limit


@dataclass(frozen=True)
class WantedCondition:
    type: str
    status: ConditionStatus
    reason: str
    message: str


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_conditions(
    existing: Sequence[dict[str, Any]] | None,
    wanted: Sequence[WantedCondition],
    *,
    generation: int | None,
    now: str,
) -> list[dict[str, Any]]:
    """metav1 SetStatusCondition semantics for each wanted condition; other types are kept, after ours."""
    by_type = {str(condition.get("type")): condition for condition in existing or () if isinstance(condition, dict)}
    merged: list[dict[str, Any]] = []
    for want in wanted:
        previous = by_type.get(want.type)
        transition = now
        if previous is not None and previous.get("status") == want.status and previous.get("lastTransitionTime"):
            transition = str(previous["lastTransitionTime"])
        condition: dict[str, Any] = {
            "type": want.type,
            "status": want.status,
            "reason": want.reason,
            "message": want.message[:MAX_MESSAGE],
            "lastTransitionTime": transition,
        }
        if generation is not None:
            condition["observedGeneration"] = generation
        merged.append(condition)
    ours = {want.type for want in wanted}
    merged.extend(
        condition for condition in existing or () if isinstance(condition, dict) and condition.get("type") not in ours
    )
    return merged


def condition_status(status: dict[str, Any] | None, condition_type: str) -> str | None:
    for condition in (status or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return str(condition.get("status"))
    return None


def status_differs(current: dict[str, Any] | None, desired: dict[str, Any]) -> bool:
    """Whether writing `desired` would change anything we own in the stored status."""
    current = current or {}
    return any(not json_equal(current.get(field), desired.get(field)) for field in desired)
