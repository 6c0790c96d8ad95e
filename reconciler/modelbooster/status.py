"""ModelBooster status: conditions with observedGeneration, backendStatuses, backendCount, change detection.

Pure functions (docs/design/reconciler.md §8). The reconciler computes the whole status once per reconcile, at the end,
from what it did and what the caches show, and writes it only if it differs from the stored one. So:
- no flapping: a reconcile never writes an intermediate `Active=False` on the way to `Active=True`;
- `lastTransitionTime` changes only when a condition's status changes;
- a no-op reconcile writes nothing;
- `Failed` goes back to False on the next successful reconcile (the reference never cleared it: Q6).

The four conditions are always present, in the order Initialized, Active, Failed, UpToDate; conditions of other
types that someone else added are kept after ours. UpToDate says whether every ModelServing runs the pod
template this version renders, or how many keep an older one (docs/design/reconciler.md §16).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reconciler.runtime.conditions import WantedCondition, condition_status, merge_conditions
from shared.constants import CONDITION_ACTIVE, CONDITION_FAILED, CONDITION_INITIALIZED, CONDITION_UP_TO_DATE

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
REASON_CHILD_TERMINATING = "ChildTerminating"
REASON_LORA = "LoraUpdateFailed"
REASON_KIND_NOT_SERVED = "KindNotServed"
REASON_IMMUTABLE = "ImmutableField"
REASON_REFUSED = "ChildRefused"
REASON_SUCCEEDED = "ReconcileSucceeded"
MESSAGE_SUCCEEDED = "all children are applied"
REASON_CURRENT = "CurrentRendering"
MESSAGE_CURRENT = "every ModelServing runs the current rendering"
REASON_OLDER = "OlderRendering"
REASON_NOT_RENDERED = "NotRendered"
MESSAGE_NOT_RENDERED = "the children are not rendered (see the Failed condition)"



@dataclass(frozen=True)
class BackendState:
    name: str
    available: bool
    replicas: int
    terminating: bool = False  # its ModelServing is being deleted (a finalizer may hold it)


@dataclass(frozen=True)
class Outcome:
    """What one reconcile achieved, as far as status is concerned."""

    applied_all: bool
    failure: str | None = None
    failure_reason: str = REASON_ABNORMAL
    # The ModelServings kept at an older rendering (None: nothing was rendered, e.g. an invalid spec), of how
    # many, and how to ask for the current rendering (the rollout command for this ModelBooster).
    older: tuple[str, ...] | None = None
    servings: int = 0
    rollout_hint: str = ""


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
        terminating = [backend.name for backend in backends if backend.terminating]
        if terminating:
            detail += f" (ModelServing terminating: {', '.join(terminating)})"
        active = WantedCondition(CONDITION_ACTIVE, "False", REASON_PROCESSING, MESSAGE_PROCESSING + detail)
    if outcome.failure is not None:
        failed = WantedCondition(CONDITION_FAILED, "True", outcome.failure_reason, outcome.failure)
    else:
        failed = WantedCondition(CONDITION_FAILED, "False", REASON_SUCCEEDED, MESSAGE_SUCCEEDED)
    return [initialized, active, failed, up_to_date(current, outcome)]


def up_to_date(current: dict[str, Any] | None, outcome: Outcome) -> WantedCondition:
    """UpToDate: whether every ModelServing runs the current rendering; unchanged when nothing was rendered."""
    if outcome.older is None:
        for condition in (current or {}).get("conditions") or ():
            if isinstance(condition, dict) and condition.get("type") == CONDITION_UP_TO_DATE:
                status = condition.get("status")
                if status in ("True", "False", "Unknown"):
                    return WantedCondition(CONDITION_UP_TO_DATE, status, str(condition.get("reason") or ""),
                                           str(condition.get("message") or ""))  # fmt: skip
        return WantedCondition(CONDITION_UP_TO_DATE, "Unknown", REASON_NOT_RENDERED, MESSAGE_NOT_RENDERED)
    if not outcome.older:
        return WantedCondition(CONDITION_UP_TO_DATE, "True", REASON_CURRENT, MESSAGE_CURRENT)
    count = len(outcome.older)
    noun = "ModelServing runs" if outcome.servings == 1 else "ModelServings run"
    message = (
        f"{count} of {outcome.servings} {noun} an older rendering than this version of modelbooster renders "
        f"({', '.join(outcome.older)}); it is kept, so that no pod restarts, until the ModelBooster's spec "
        "changes or a rollout is asked for, which restarts their pods"
    )
    if outcome.rollout_hint:
        message += f": {outcome.rollout_hint}"
    return WantedCondition(CONDITION_UP_TO_DATE, "False", REASON_OLDER, message)


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
