"""ModelBooster status: conditions with observedGeneration, backendStatuses, backendCount, change detection.

Pure functions (DECISIONS.md §6). The reconciler computes the whole status once per reconcile, at the end,
from what it did and what the caches show, and writes it only if it differs from the stored one. So:
- no flapping: a reconcile never writes an intermediate `Active=False` on the way to `Active=True`;
- `lastTransitionTime` changes only when a condition's status changes;
- a no-op reconcile writes nothing;
- `Failed` goes back to False on the next successful reconcile (the reference never cleared it: Q6).

The three conditions are always present, in the order Initialized, Active, Failed; conditions of other
types that someone else added are kept after ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from shared.constants import CONDITION_ACTIVE, CONDITION_FAILED, CONDITION_INITIALIZED

ConditionStatus = Literal["True", "False", "Unknown"]

# Reasons and messages. Active/Failed keep the reference's reasons (kthena-v0.1.0-facts §5.5) so that
# existing tooling reading them keeps working; the others are ours.
REASON_INITIALIZED = "ModelInitialized"
MESSAGE_INITIALIZED = "ModelBooster initialized"
REASON_INITIALIZING = "ModelCreating"
MESSAGE_INITIALIZING = "children are not all applied yet"
REASON_AVAILABLE = "ModelAvailable"
MESSAGE_AVAILABLE = "ModelBooster is ready"
REASON_PROCESSING = "ModelProcessing"
MESSAGE_PROCESSING = "ModelBooster not ready yet"
REASON_ABNORMAL = "ModelAbnormal"
REASON_INVALID = "InvalidSpec"
REASON_NOT_OWNED = "OwnershipConflict"
REASON_LORA = "LoraUpdateFailed"
REASON_SUCCEEDED = "ReconcileSucceeded"
MESSAGE_SUCCEEDED = "all children are applied"

MAX_MESSAGE = 32768  # metav1.Condition.message limit


@dataclass(frozen=True)
class WantedCondition:
    type: str
    status: ConditionStatus
    reason: str
    message: str


@dataclass(frozen=True)
class BackendState:
    name: str
    available: bool
    replicas: int


@dataclass(frozen=True)
class Outcome:
    """What one reconcile achieved, as far as status is concerned."""

    applied_all: bool
    failure: str | None = None
    failure_reason: str = REASON_ABNORMAL


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_between(start: object, end: str) -> float | None:
    """`end - start` of two RFC 3339 timestamps in seconds; None when `start` is missing or malformed."""
    if not isinstance(start, str):
        return None
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None


def becomes_initialized(current: dict[str, Any] | None, desired: dict[str, Any]) -> bool:
    """Whether writing `desired` turns the Initialized condition True."""
    return (
        condition_status(current, CONDITION_INITIALIZED) != "True"
        and condition_status(desired, CONDITION_INITIALIZED) == "True"
    )


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


def booster_conditions(
    current: dict[str, Any] | None, *, outcome: Outcome, backends: Sequence[BackendState]
) -> list[WantedCondition]:
    already_initialized = condition_status(current, CONDITION_INITIALIZED) == "True"
    if outcome.applied_all or already_initialized:
        initialized = WantedCondition(CONDITION_INITIALIZED, "True", REASON_INITIALIZED, MESSAGE_INITIALIZED)
    else:
        initialized = WantedCondition(CONDITION_INITIALIZED, "False", REASON_INITIALIZING, MESSAGE_INITIALIZING)
    unavailable = [backend.name for backend in backends if not backend.available]
    if backends and not unavailable:
        active = WantedCondition(CONDITION_ACTIVE, "True", REASON_AVAILABLE, MESSAGE_AVAILABLE)
    else:
        detail = f": backends not available: {', '.join(unavailable)}" if unavailable else ""
        active = WantedCondition(CONDITION_ACTIVE, "False", REASON_PROCESSING, MESSAGE_PROCESSING + detail)
    if outcome.failure is not None:
        failed = WantedCondition(CONDITION_FAILED, "True", outcome.failure_reason, outcome.failure)
    else:
        failed = WantedCondition(CONDITION_FAILED, "False", REASON_SUCCEEDED, MESSAGE_SUCCEEDED)
    return [initialized, active, failed]


def booster_status(
    current: dict[str, Any] | None,
    *,
    generation: int | None,
    outcome: Outcome,
    backends: Sequence[BackendState],
    now: str,
) -> dict[str, Any]:
    """The complete desired `.status` of a ModelBooster.

    `backends` holds one state per backend of the spec, so `backendCount` (read by the `Backends` printer
    column, since JSONPath cannot count a list) is its length.
    """
    wanted = booster_conditions(current, outcome=outcome, backends=backends)
    status: dict[str, Any] = {
        "conditions": merge_conditions((current or {}).get("conditions"), wanted, generation=generation, now=now),
        "backendStatuses": [{"name": backend.name, "replicas": backend.replicas} for backend in backends],
        "backendCount": len(backends),
    }
    if generation is not None:
        status["observedGeneration"] = generation
    return status


def status_differs(current: dict[str, Any] | None, desired: dict[str, Any]) -> bool:
    """Whether writing `desired` would change anything we own in the stored status."""
    current = current or {}
    return any(current.get(field) != desired.get(field) for field in desired)
