"""ModelBooster status: conditions with observedGeneration, backendStatuses, backendCount, change detection.

Pure functions (docs/design/reconciler.md §8). The reconciler computes the whole status once per reconcile, at the end,
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
from datetime import datetime
from typing import Any

from reconciler.runtime.conditions import WantedCondition, condition_status, merge_conditions
from shared.constants import CONDITION_ACTIVE, CONDITION_FAILED, CONDITION_INITIALIZED

# Reasons and messages. Active/Failed keep the reference's reasons (docs/design/quirks.md §3) so that
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
REASON_KIND_NOT_SERVED = "KindNotServed"
REASON_SUCCEEDED = "ReconcileSucceeded"
MESSAGE_SUCCEEDED = "all children are applied"



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
