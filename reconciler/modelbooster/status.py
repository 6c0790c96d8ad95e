"""A ModelBooster's status, derived once per reconcile from what it found and what the caches show
(docs/design/reconciler.md §8): computed whole, written only when it differs, so a no-op reconcile writes
nothing and conditions never flap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Final

from reconciler.runtime.apply import is_controlled_by
from reconciler.runtime.conditions import WantedCondition, condition_status, merge_conditions, status_differs
from reconciler.runtime.informer import Informer
from reconciler.runtime.objects import metadata
from shared.backend_shape import backend_objects
from shared.constants import CONDITION_ACTIVE, CONDITION_FAILED, CONDITION_INITIALIZED, CONDITION_UP_TO_DATE
from shared.naming import backend_resource_name

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
INT32_MAX: Final = 2**31 - 1


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


@dataclass(frozen=True)
class Findings:
    """What stood in the way in one reconcile, by kind; each step returns its own, the reconcile adds them up."""

    not_owned: tuple[str, ...] = ()
    terminating: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    unavailable: int = 0  # how many of `failures` say the server is unavailable (runtime/outage.py)
    # Children the API server refused (422): not retried, since only a change of the ModelBooster or of the
    # child can make the same write pass; they wake the ModelBooster.
    refused: tuple[str, ...] = ()
    held_back: tuple[str, ...] = ()  # changes that would alter a field the served CRD declares immutable
    lora: tuple[str, ...] = ()  # LoRA calls that failed (already reported by their own events)

    def __add__(self, other: Findings) -> Findings:
        return Findings(**{one.name: getattr(self, one.name) + getattr(other, one.name) for one in fields(self)})

    @property
    def ok(self) -> bool:
        return not (self.failures or self.not_owned or self.lora or self.terminating or self.refused)

    @property
    def unavailable_only(self) -> bool:
        return bool(self.failures) and self.unavailable == len(self.failures) and not (
            self.not_owned or self.lora or self.terminating or self.refused
        )

    @property
    def retry(self) -> bool:
        """Whether retrying may succeed without anything else changing (a refusal or a held-back change may not)."""
        return bool(self.failures or self.not_owned or self.lora or self.terminating)

    @property
    def retry_message(self) -> str:
        return "; ".join(self.not_owned + self.terminating + self.failures + self.lora)


def outcome(findings: Findings, *, older: tuple[str, ...], servings: int, rollout_hint: str) -> Outcome:
    """The status a reconcile's findings give: the first kind found, in this order, names the Failed reason."""
    applied_all, failure, reason = True, None, REASON_ABNORMAL
    for messages, reason_now, applied in (
        (findings.not_owned, REASON_NOT_OWNED, False),
        (findings.terminating, REASON_CHILD_TERMINATING, False),
        (findings.failures, REASON_ABNORMAL, False),
        (findings.refused, REASON_REFUSED, False),
        (findings.held_back, REASON_IMMUTABLE, True),
        (findings.lora, REASON_LORA, True),
    ):
        if messages:
            applied_all, failure, reason = applied, "; ".join(messages), reason_now
            break
    return Outcome(
        applied_all=applied_all,
        failure=failure,
        failure_reason=reason,
        older=older,
        servings=servings,
        rollout_hint=rollout_hint,
    )


def serving_replicas(serving: Mapping[str, Any] | None) -> int:
    """The ModelServing's `status.replicas`, or 0 when it holds no valid count (negative, not an integer, beyond
    int32): anyone with access to the status subresource can write anything there, and a value the
    ModelBooster's schema refuses would make every status write fail."""
    value = ((serving or {}).get("status") or {}).get("replicas")
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX
    return value if valid else 0  # type: ignore[return-value]


def backend_names(booster: Mapping[str, Any]) -> list[str]:
    """Backend names straight from the raw spec (either shape), so status can be computed even for an invalid
    object."""
    names: list[str] = []
    for backend in backend_objects(booster.get("spec")):
        name = backend.get("name")
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def backend_states(booster: dict[str, Any], servings: Informer | None) -> list[BackendState]:
    """One state per backend of the spec (names are required and unique: the CRD's list-map), in order, from
    the ModelServings of this ModelBooster in the cache."""
    meta = metadata(booster)
    namespace, model = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    states = []
    for backend in backend_names(booster):
        serving = servings.get(namespace, backend_resource_name(model, backend)) if servings is not None else None
        if serving is not None and not is_controlled_by(serving, str(meta.get("uid"))):
            serving = None
        terminating = serving is not None and bool(metadata(serving).get("deletionTimestamp"))
        available = serving is not None and condition_status(serving.get("status"), "Available") == "True"
        states.append(
            BackendState(
                name=backend,
                available=available and not terminating,
                replicas=serving_replicas(serving),
                terminating=terminating,
            )
        )
    return states


def new_status(
    booster: dict[str, Any], outcome: Outcome, *, servings: Informer | None, now: str
) -> dict[str, Any] | None:
    """The status to write, or None when the stored one says the same."""
    current = booster.get("status")
    generation = metadata(booster).get("generation")
    desired = booster_status(
        current,
        generation=generation if isinstance(generation, int) else None,
        outcome=outcome,
        backends=backend_states(booster, servings),
        now=now,
    )
    return desired if status_differs(current, desired) else None


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
