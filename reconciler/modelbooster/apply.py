"""Writing a ModelBooster's children (docs/design/reconciler.md §3, §4): every child made to match at once, and
what each write came to, sorted into what the reconcile reports; nothing here decides what happens next."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reconciler.modelbooster.collisions import conflict_message
from reconciler.modelbooster.events import Written
from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING
from reconciler.modelbooster.rollout import TemplateRecord
from reconciler.modelbooster.status import Findings
from reconciler.runtime.apply import ChildOutcome, ChildTerminating, Desired, NotControlledError, ensure_child
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.foreign import RemovalHistory, ToleratedFields
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.namespaces import refused_as_terminating
from reconciler.runtime.objects import metadata
from reconciler.runtime.outage import is_unavailable
from shared.constants import LABEL_MANAGED_BY, LABEL_MODEL_NAME, MANAGED_BY_VALUE

Result = ChildOutcome | BaseException


@dataclass(frozen=True)
class Applied:
    """What writing the children came to; the results of single children add up."""

    servings: dict[str, ChildOutcome] = field(default_factory=dict)  # the ModelServings in place, by name
    written: Written = field(default_factory=Written)
    findings: Findings = field(default_factory=Findings)
    actions: tuple[tuple[str, str], ...] = ()  # (kind, action) of each child written
    blocked: tuple[NotControlledError, ...] = ()  # same-named objects in the way, to watch
    namespace_terminating: tuple[str, ...] = ()  # namespaces that refused a create as being deleted

    def __add__(self, other: Applied) -> Applied:
        return Applied(
            servings={**self.servings, **other.servings},
            written=self.written + other.written,
            findings=self.findings + other.findings,
            actions=self.actions + other.actions,
            blocked=self.blocked + other.blocked,
            namespace_terminating=self.namespace_terminating + other.namespace_terminating,
        )


async def apply_children(
    client: KubeClient,
    caches: Mapping[Kind, Informer],
    booster: dict[str, Any],
    desired: Sequence[Desired],
    *,
    manager: str,
    tolerated: ToleratedFields,
    history: RemovalHistory,
) -> list[Result]:
    """Make every child match, concurrently; one result (or error) per child."""
    meta = booster["metadata"]
    owner = f"ModelBooster {meta.get('namespace')}/{meta.get('name')}"
    selector = {LABEL_MANAGED_BY: MANAGED_BY_VALUE, LABEL_MODEL_NAME: str(meta.get("name"))}
    adoption: list[asyncio.Task[bool]] = []

    def can_adopt() -> asyncio.Task[bool]:
        # One fresh read of the ModelBooster per reconcile, shared by every child it adopts (as
        # Kubernetes' controllers do: never adopt into an owner that is gone or going).
        if not adoption:
            adoption.append(asyncio.ensure_future(still_current(client, booster)))
        return adoption[0]

    return await asyncio.gather(
        *(
            ensure_child(
                client=client,
                cache=caches[child.kind],
                desired=child,
                owner_uid=str(meta.get("uid")),
                owner=owner,
                manager=manager,
                selector=selector,
                can_adopt=can_adopt,
                tolerated=tolerated,
                history=history,
            )
            for child in desired
        ),
        return_exceptions=True,
    )


def sorted_results(
    desired: Sequence[Desired], results: Sequence[Result], *, owner: str, taken_over: Sequence[str]
) -> Applied:
    """Each child's result, sorted by what it means; `owner` is the ModelBooster's name, `taken_over` the
    children whose TakenOver event says what was written (no Updated besides)."""
    applied = Applied(written=Written(taken_over=tuple(taken_over)))
    for child, result in zip(desired, results, strict=True):
        applied += _sorted(child, result, owner=owner, taken_over=taken_over)
    return applied


def _sorted(child: Desired, result: Result, *, owner: str, taken_over: Sequence[str]) -> Applied:
    """One child's result. An error that is no answer of the API server is a bug, and raised."""
    if isinstance(result, ChildOutcome):
        return _written(child, result, updated=child.ref() not in taken_over)
    if isinstance(result, NotControlledError):
        return Applied(findings=Findings(not_owned=(conflict_message(result, owner=owner),)), blocked=(result,))
    if isinstance(result, ChildTerminating):
        return Applied(findings=Findings(terminating=(str(result),)))
    if isinstance(result, ApiError) and refused_as_terminating(result):
        return Applied(namespace_terminating=(child.namespace,))
    if isinstance(result, ApiError) and result.status == 422:
        refused = (
            f"the API server refused {child.ref()}: {result.message}; this is not retried until the "
            "ModelBooster or the child changes"
        )
        return Applied(findings=Findings(refused=(refused,)))
    if isinstance(result, ApiError):
        failure = f"applying {child.ref()} failed: {result}"
        return Applied(findings=Findings(failures=(failure,), unavailable=int(is_unavailable(result))))
    raise result


def _written(child: Desired, result: ChildOutcome, *, updated: bool) -> Applied:
    action = result.action
    # A removal's own Event says what was written, as does a TakenOver event: no Updated besides.
    updated = updated and action in ("updated", "replaced") and not result.removed
    return Applied(
        servings={child.name: result} if child.kind == MODEL_SERVING else {},
        written=Written(
            created=(child,) if action == "created" else (),
            adopted=(child,) if action == "adopted" else (),
            updated=(child,) if updated else (),
            removed=(f"{child.ref()}: {'; '.join(result.removed)}",) if result.removed else (),
            kept=(f"{child.ref()}: {'; '.join(result.kept)}",) if result.kept else (),
        ),
        actions=((child.kind.kind, action),) if action != "unchanged" else (),
    )


RECORD_ATTEMPTS: Final = 3


async def record_templates(
    client: KubeClient, servings: Informer, corrections: Sequence[TemplateRecord], *, manager: str
) -> Findings:
    """Write each template-digest correction (rollout.digest_corrections) to its ModelServing, on condition that
    the object is still the one our write returned. Someone may write it in between: a write that left the
    pod-shaping spec as we stored it (a label, an autoscaler's replicas) is written over again, at most
    `RECORD_ATTEMPTS` times; one that changed it is theirs to be judged by the next reconcile (their write's
    event brings it), and nothing is recorded now: recording would make their edit ours."""
    failures: list[str] = []
    unavailable = 0
    for record in corrections:
        try:
            written = await _record_template(client, record, manager=manager)
        except ApiError as error:
            failures.append(f"recording the template of {record.child.ref()} failed: {error}")
            unavailable += is_unavailable(error)
            continue
        if written is not None:
            servings.write_through(written)
    return Findings(failures=tuple(failures), unavailable=unavailable)


async def _record_template(client: KubeClient, record: TemplateRecord, *, manager: str) -> dict[str, Any] | None:
    """The ModelServing with the digest recorded, or None when someone changed its pod-shaping spec since."""
    child, version = record.child, metadata(record.stored).get("resourceVersion")
    for _ in range(RECORD_ATTEMPTS):
        try:
            return await client.patch(
                MODEL_SERVING, child.namespace, child.name, record.patch(version), field_manager=manager
            )
        except ApiError as error:
            if error.not_found:
                return None
            if not error.conflict:
                raise
        try:
            fresh = await client.get(MODEL_SERVING, child.namespace, child.name)
        except ApiError as error:
            if error.not_found:
                return None
            raise
        if not record.still_ours(fresh):
            return None
        version = metadata(fresh).get("resourceVersion")
    return None


async def still_current(client: KubeClient, booster: dict[str, Any]) -> bool:
    """Whether the ModelBooster, read afresh, is the same object and not being deleted."""
    meta = booster["metadata"]
    try:
        fresh = await client.get(MODEL_BOOSTER, str(meta.get("namespace")), str(meta.get("name")))
    except ApiError as error:
        if error.not_found:
            return False
        raise
    fresh_meta = metadata(fresh)
    return fresh_meta.get("uid") == meta.get("uid") and not fresh_meta.get("deletionTimestamp")
