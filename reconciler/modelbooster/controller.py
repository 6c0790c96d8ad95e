"""The ModelBooster controller: ModelBooster → children, status and events (docs/design/reconciler.md §2).

One reconcile of `namespace/name`, reading everything from the informer caches:
1. gone or being deleted, or its namespace being deleted → nothing to do (children go with it through
   ownerReference garbage collection, or with the namespace);
2. default + validate (defence in depth: an object that bypassed the webhook and is invalid is marked Failed
   with the webhook's message, and nothing else is written), then synthesize the desired children;
3. make each child match (apply.py): create the missing, update the drifted or outdated, remove what others
   added to a child's spec, adopt orphans of ours, refuse to touch same-named objects this ModelBooster may not
   take over (and watch them, so their going is noticed at once);
4. if every child is in place, delete stale children of every kind (a removed backend, autoscaling switched
   level or removed) that this ModelBooster controls, and orphans of its model it no longer wants;
5. compute the status (status.py) and write it only if it changed; post Events for what was created, updated,
   deleted, and for failures.
Failures are retried with per-key exponential backoff; an invalid spec is not retried (a new generation
triggers the next attempt).

Child kinds follow what the cluster serves (children.py): children are rendered in the served
autoscaling generation's shape, without the fields the served schemas would prune (reported once), and a
ModelBooster that needs a kind the cluster does not serve is `Failed` with reason `KindNotServed` and nothing
of it is written, until the CRD appears.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reconciler.modelbooster.cache import booster_transform, child_transform
from reconciler.modelbooster.children import ChildInformers
from reconciler.modelbooster.collisions import conflict_message
from reconciler.modelbooster.kinds import CHILD_KINDS, IMMUTABLE_FIELDS, MODEL_BOOSTER, MODEL_SERVING, child_kind_of
from reconciler.modelbooster.lora import LoraPlan, LoraUpdater, pod_owner_key, pod_owner_uid, setup_pod_informer
from reconciler.modelbooster.metrics import ModelBoosterMetrics
from reconciler.modelbooster.rendering import (
    Memo,
    Rendering,
    decide,
    rendering_input,
    scaled_paths,
    template_digest,
)
from reconciler.modelbooster.scaled_fields import role_replica_paths
from reconciler.modelbooster.settings import (
    DynamicSettings,
    ModelBoosterSettings,
    SettingsConfigMap,
    add_modelbooster_arguments,
    modelbooster_settings_from_args,
)
from reconciler.modelbooster.status import (
    REASON_ABNORMAL,
    REASON_CHILD_TERMINATING,
    REASON_IMMUTABLE,
    REASON_INVALID,
    REASON_KIND_NOT_SERVED,
    REASON_LORA,
    REASON_NOT_OWNED,
    REASON_REFUSED,
    BackendState,
    Outcome,
    becomes_initialized,
    booster_status,
    seconds_between,
)
from reconciler.modelbooster.synthesis import (
    SynthesisError,
    autoscaled_backends,
    role_scaled_backends,
    synthesize,
)
from reconciler.peer import Context, Peer
from reconciler.runtime.apply import (
    REPLICAS_PATH,
    ChildOutcome,
    ChildTerminating,
    Desired,
    NotControlledError,
    adoptable,
    controller_ref,
    delete_child,
    ensure_child,
    is_controlled_by,
)
from reconciler.runtime.blockers import BlockerWatches
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.conditions import condition_status, rfc3339_now, status_differs
from reconciler.runtime.controller import Controller, ReconcileError, Result, TerminalError, map_to_controller_owner
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.foreign import RemovalHistory, ToleratedFields
from reconciler.runtime.immutable import immutable_paths
from reconciler.runtime.informer import Informer, label_index
from reconciler.runtime.kinds import CONFIG_MAP, NAMESPACE, Kind
from reconciler.runtime.lean import full_object
from reconciler.runtime.namespaces import NamespaceLifecycle, namespace_transform, refused_as_terminating
from reconciler.runtime.objects import meta_text, metadata
from reconciler.runtime.outage import is_unavailable
from reconciler.runtime.paths import Path
from reconciler.runtime.source import EventType, KeyMapper, ObjectKey, map_to_self
from shared.api.modelbooster import ModelBooster
from shared.autoscaling_generations import DEFAULT_GENERATION
from shared.backend_shape import backend_objects
from shared.constants import (
    CONDITION_ACTIVE,
    CONDITION_FAILED,
    CONDITION_INITIALIZED,
    LABEL_BACKEND_NAME,
    LABEL_MANAGED_BY,
    LABEL_MODEL_NAME,
    LABEL_MODEL_UID,
    MANAGED_BY_VALUE,
)
from shared.errors import ValidationFailed
from shared.naming import backend_resource_name
from shared.remedy import how_to_fix
from shared.rollout import ANNOTATION_ROLLOUT, ANNOTATION_TEMPLATE
from shared.validation import parse_modelbooster

logger = logging.getLogger(__name__)

CONTROLLER_NAME = "modelbooster"
CHILD_SELECTOR = f"{LABEL_MANAGED_BY}={MANAGED_BY_VALUE}"
UID_INDEX = "model-uid"
# Children by "<namespace>/<model name>": orphans of this model (§4) that the ModelBooster no longer wants.
MODEL_INDEX = "model-name"


class InvalidSpec(Exception):
    """The ModelBooster cannot be turned into children as written."""


@dataclass
class _Report:
    """What one reconcile did, for events and status."""

    created: list[Desired] = field(default_factory=list)
    updated: list[Desired] = field(default_factory=list)
    adopted: list[Desired] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # "<child>: <paths> (set by <manager>)"
    kept: list[str] = field(default_factory=list)  # the same, for fields someone keeps re-adding
    deleted: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    unavailable: int = 0  # how many of `failures` say the server is unavailable (runtime/outage.py)
    not_owned: list[str] = field(default_factory=list)
    terminating: list[str] = field(default_factory=list)
    namespace_terminating: bool = False
    lora_failures: list[str] = field(default_factory=list)  # already reported by their own events
    # Children the API server refused (422): not retried, since only a change of the ModelBooster or of the
    # child can make the same write pass; they wake the ModelBooster.
    refused: list[str] = field(default_factory=list)
    # ModelServings kept at an older rendering (§16), those taken over as they run, and the changes held back
    # because they would change a field the served CRD declares immutable.
    older: list[str] = field(default_factory=list)
    servings: int = 0
    taken_over: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)
    rollout_hint: str = ""

    @property
    def unavailable_only(self) -> bool:
        return bool(self.failures) and self.unavailable == len(self.failures) and not (
            self.not_owned or self.lora_failures or self.terminating or self.refused
        )

    @property
    def ok(self) -> bool:
        return not (self.failures or self.not_owned or self.lora_failures or self.terminating or self.refused)

    @property
    def retry(self) -> bool:
        """Whether retrying may succeed without anything else changing (a refusal or a held-back change may not)."""
        return bool(self.failures or self.not_owned or self.lora_failures or self.terminating)

    def outcome(self) -> Outcome:
        applied_all, failure, reason = True, None, REASON_ABNORMAL
        for messages, reason_now, applied in (
            (self.not_owned, REASON_NOT_OWNED, False),
            (self.terminating, REASON_CHILD_TERMINATING, False),
            (self.failures, REASON_ABNORMAL, False),
            (self.refused, REASON_REFUSED, False),
            (self.held_back, REASON_IMMUTABLE, True),
            (self.lora_failures, REASON_LORA, True),
        ):
            if messages:
                applied_all, failure, reason = applied, "; ".join(messages), reason_now
                break
        return Outcome(
            applied_all=applied_all,
            failure=failure,
            failure_reason=reason,
            older=tuple(self.older),
            servings=self.servings,
            rollout_hint=self.rollout_hint,
        )


def serving_available(serving: dict[str, Any] | None) -> bool:
    for condition in ((serving or {}).get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Available":
            return condition.get("status") == "True"
    return False


INT32_MAX = 2**31 - 1


def serving_replicas(serving: dict[str, Any] | None) -> int:
    """The ModelServing's `status.replicas`, or 0 when it holds no valid count (negative, not an integer, beyond
    int32): anyone with access to the status subresource can write anything there, and a value the
    ModelBooster's schema refuses would make every status write fail."""
    value = ((serving or {}).get("status") or {}).get("replicas")
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX
    return value if valid else 0  # type: ignore[return-value]


def backend_names(booster: dict[str, Any]) -> list[str]:
    """Backend names straight from the raw spec (either shape), so status can be computed even for an invalid
    object."""
    names: list[str] = []
    for backend in backend_objects(booster.get("spec")):
        name = backend.get("name")
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


class ModelBoosterReconciler:
    def __init__(
        self,
        *,
        client: KubeClient,
        boosters: Informer,
        children: ChildInformers,
        recorder: EventRecorder,
        settings: DynamicSettings,
        field_manager: str,
        metrics: ModelBoosterMetrics,
        lora: LoraUpdater,
        namespaces: NamespaceLifecycle,
        blockers: BlockerWatches,
        now: Callable[[], str] = rfc3339_now,
    ) -> None:
        self.lora = lora
        self.namespaces = namespaces
        self.blockers = blockers
        self.tolerated = ToleratedFields()
        self.removals = RemovalHistory()
        self.client = client
        self.boosters = boosters
        self.children = children
        self.recorder = recorder
        self.settings = settings
        self.field_manager = field_manager
        self.metrics = metrics
        self._now = now
        # Per ModelBooster uid: its namespace and how many of its ModelServings keep an older rendering (§16).
        self.older: dict[str, tuple[str, int]] = {}
        self._immutable_memo: tuple[Any, tuple[Path, ...]] | None = None
        self._rendering_memo = Memo()

    # ------------------------------------------------------------------ reconcile
    async def reconcile(self, key: ObjectKey) -> Result:
        cached = self.boosters.get(key.namespace, key.name)
        if cached is None:
            return Result()
        booster = full_object(cached)
        meta = metadata(booster)
        if meta.get("deletionTimestamp"):
            return Result()
        if self.namespaces.terminating(key.namespace):
            self.namespaces.skip(key.namespace, "its ModelBoosters are")
            return Result()
        uid = str(meta.get("uid") or "")
        if not self.children.settled:
            return Result()  # served kinds not all known yet: every ModelBooster is woken once they are
        try:
            typed = self.parse(booster)
            desired = self._synthesize(typed)
        except InvalidSpec as error:
            outcome = Outcome(applied_all=False, failure=str(error), failure_reason=REASON_INVALID)
            await asyncio.gather(
                self._write_status(booster, outcome),
                self.recorder.emit(booster, type="Warning", reason="InvalidSpec", message=str(error)),
            )
            raise TerminalError(f"{key}: {error}") from None

        missing = self.children.missing(desired, autoscaled=bool(autoscaled_backends(typed)))
        if missing:
            await self._not_served(booster, key, missing)
        desired, pruned = self.children.fit.fit(uid, desired)
        for message in pruned:
            await self.recorder.emit(booster, type="Warning", reason="FieldNotServed", message=message)
        plan = self.lora.plan(typed=typed, desired=desired, servings=self.children[MODEL_SERVING], render=self._render)
        report = _Report(rollout_hint=rollout_hint(key))
        renderings = self._renderings(booster, plan, report)
        desired = [
            renderings[child.name].desired if child.kind == MODEL_SERVING and child.name in renderings else child
            for child in plan.desired
        ]
        outcomes = await self._apply_all(booster, desired, report)
        if report.namespace_terminating:
            self.namespaces.skip(key.namespace, "its ModelBoosters are")
            return Result()
        await self._record_stored(renderings, outcomes, report)
        self.older[uid] = (key.namespace, len(report.older))
        if report.ok:
            await self._prune(booster, uid, desired, report)
        # LoRA state follows the templates written: a kept older one says nothing of the adapters it carries.
        kept = {name for name, rendering in renderings.items() if rendering.older}
        await self._finish_lora(booster, plan, {n: o for n, o in outcomes.items() if n not in kept}, report)
        if report.unavailable_only:
            # The server is (partly) unavailable, e.g. restarting: nothing a user could act on, and a Failed status
            # and an ApplyFailed event now would only be rewritten once it answers; the retry comes at once then.
            message = "; ".join(report.failures)
            report.failures = []
            await self._post_events(booster, report)
            raise ReconcileError(message, outage=True)
        # Independent writes: one round trip instead of two.
        await asyncio.gather(self._write_status(booster, report.outcome()), self._post_events(booster, report))
        if report.retry:
            raise ReconcileError("; ".join(report.not_owned + report.terminating + report.failures +
                                           report.lora_failures))  # fmt: skip
        return Result()

    # ------------------------------------------------------------------ renderings (§16)
    def _renderings(self, booster: dict[str, Any], plan: LoraPlan, report: _Report) -> dict[str, Rendering]:
        """Per ModelServing of ours (or ours to adopt): take it over, keep it, roll it or hold it back."""
        servings = self.children.get(MODEL_SERVING)
        if servings is None:
            return {}
        meta = booster["metadata"]
        uid = str(meta.get("uid"))
        selector = {LABEL_MANAGED_BY: MANAGED_BY_VALUE, LABEL_MODEL_NAME: str(meta.get("name"))}
        schema = self.children.schema(MODEL_SERVING)
        immutable = self._immutable_paths(schema)
        renderings: dict[str, Rendering] = {}
        for child in plan.desired:
            if child.kind != MODEL_SERVING:
                continue
            live = servings.get(child.namespace, child.name)
            if live is not None and not adoptable(live, owner_uid=uid, selector=selector):
                continue  # not ours: refused when written (§4)
            backend = str((metadata(child.obj).get("labels") or {}).get(LABEL_BACKEND_NAME) or "")
            source = rendering_input(booster, backend, runtime_adapters=plan.templates.get(backend))
            rendering = decide(child, live, source=source, schema=schema, immutable=immutable,
                               manager=self.field_manager, memo=self._rendering_memo)  # fmt: skip
            renderings[child.name] = rendering
            report.servings += 1
            if rendering.older:
                report.older.append(child.name)
            if live is not None and not (metadata(full_object(live)).get("annotations") or {}).get(ANNOTATION_TEMPLATE):
                report.taken_over.append(child.ref())
            if rendering.conflicts:
                fields = "; ".join(conflict.describe(child.obj) for conflict in rendering.conflicts)
                report.held_back.append(
                    f"{child.ref()} is kept as it runs: the change would alter what its served CRD "
                    f"{MODEL_SERVING.plural}.{MODEL_SERVING.group} declares immutable ({fields}), which the API "
                    "server refuses to update. To apply it, delete the ModelServing, which restarts its pods, and "
                    f"it is created anew (`kubectl delete {MODEL_SERVING.plural}.{MODEL_SERVING.group} -n "
                    f"{child.namespace} {child.name}`); or change the ModelBooster back"
                )
        return renderings

    def _immutable_paths(self, schema: Any) -> tuple[Path, ...]:
        """The fields the served ModelServing CRD declares immutable (one walk per served schema)."""
        if self._immutable_memo is None or self._immutable_memo[0] is not schema:
            self._immutable_memo = (schema, immutable_paths(schema))
        return self._immutable_memo[1]

    async def _record_stored(
        self, renderings: dict[str, Rendering], outcomes: dict[str, ChildOutcome], report: _Report
    ) -> None:
        """Where the server stored something else than the digest a write of the current rendering recorded (a
        mutating webhook), record what it stored: one more write, of the annotation only."""
        servings = self.children.get(MODEL_SERVING)
        if servings is None:
            return
        for name, rendering in renderings.items():
            if rendering.written is None or name not in outcomes or outcomes[name].action == "unchanged":
                continue  # nothing written, nothing recorded to correct
            child = rendering.desired
            stored = servings.get(child.namespace, name)
            if stored is None:
                continue
            whole = full_object(stored)
            actual = template_digest(whole, scaled=scaled_paths(child))
            if (metadata(whole).get("annotations") or {}).get(ANNOTATION_TEMPLATE) == actual:
                continue
            patch = {"metadata": {"annotations": {ANNOTATION_TEMPLATE: actual}}}
            try:
                written = await self.client.patch(MODEL_SERVING, child.namespace, name, patch,
                                                  field_manager=self.field_manager)  # fmt: skip
            except ApiError as error:
                report.failures.append(f"recording the template of {child.ref()} failed: {error}")
                report.unavailable += is_unavailable(error)
                continue
            servings.write_through(written)

    async def _not_served(self, booster: dict[str, Any], key: ObjectKey, missing: list[str]) -> None:
        """Nothing of this ModelBooster is written; the CRD's appearance wakes it (no retry meanwhile)."""
        message = "; ".join(missing)
        outcome = Outcome(applied_all=False, failure=message, failure_reason=REASON_KIND_NOT_SERVED)
        await asyncio.gather(
            self._write_status(booster, outcome),
            self.recorder.emit(booster, type="Warning", reason=REASON_KIND_NOT_SERVED, message=message),
        )
        raise TerminalError(f"{key}: {message}")

    def _render(self, typed: ModelBooster) -> list[Desired]:
        """Synthesis as written to this cluster: also without the fields its schemas would prune."""
        return self.children.fit.fit(str(typed.metadata.uid or ""), self._synthesize(typed))[0]

    async def _finish_lora(
        self, booster: dict[str, Any], plan: LoraPlan, servings: dict[str, ChildOutcome], report: _Report
    ) -> None:
        """Record which adapters each ModelServing now carries, then bring the running pods up to date."""
        meta = booster["metadata"]
        uid, model = str(meta.get("uid")), str(meta.get("name"))
        for backend, template in plan.templates.items():
            if backend_resource_name(model, backend) in servings:
                self.lora.commit(uid=uid, backend=backend, template=template, target=plan.targets[backend])
        if report.ok and plan.work:
            report.lora_failures.extend(await self.lora.execute(booster, plan.work))

    @staticmethod
    def parse(booster: dict[str, Any]) -> ModelBooster:
        """Default and validate like admission does; raise InvalidSpec with the message a user should see:
        the webhook's denial, then what to do about it. Nothing is carried over here, unlike on an admitted
        UPDATE: an object still holding a field we do not support is not synthesized."""
        try:
            return parse_modelbooster({key: value for key, value in booster.items() if key != "status"})
        except ValidationFailed as error:
            meta = metadata(booster)
            remedy = how_to_fix(error.errors, namespace=str(meta.get("namespace") or ""), name=str(meta.get("name")))
            raise InvalidSpec(f"{error}\n{remedy}") from None

    def _synthesize(self, typed: ModelBooster) -> list[Desired]:
        generation = self.children.generation or DEFAULT_GENERATION
        try:
            objects = synthesize(typed, self.settings.current, generation=generation)
        except SynthesisError as error:
            raise InvalidSpec(str(error)) from None
        autoscaled = autoscaled_backends(typed)
        roles_scaled = role_scaled_backends(typed)
        desired: list[Desired] = []
        for obj in objects:
            kind = child_kind_of(obj)
            if kind is None:
                raise InvalidSpec(f"synthesis produced an object of unknown kind {obj.get('kind')!r}")
            foreign: tuple[Path, ...] = ()
            backend = (metadata(obj).get("labels") or {}).get(LABEL_BACKEND_NAME)
            if kind == MODEL_SERVING and backend in autoscaled:
                foreign = (REPLICAS_PATH,)
            if kind == MODEL_SERVING and backend in roles_scaled:
                foreign += role_replica_paths(obj)
            desired.append(
                Desired(kind=kind, obj=obj, foreign_after_create=foreign, immutable=IMMUTABLE_FIELDS.get(kind, ()))
            )
        return desired

    async def _apply_all(
        self, booster: dict[str, Any], desired: Sequence[Desired], report: _Report
    ) -> dict[str, ChildOutcome]:
        """Make every child match; returns the ModelServings that are in place, by name."""
        meta = booster["metadata"]
        owner = f"ModelBooster {meta.get('namespace')}/{meta.get('name')}"
        selector = {LABEL_MANAGED_BY: MANAGED_BY_VALUE, LABEL_MODEL_NAME: str(meta.get("name"))}
        adoption: list[asyncio.Task[bool]] = []

        def can_adopt() -> asyncio.Task[bool]:
            # One fresh read of the ModelBooster per reconcile, shared by every child it adopts (as
            # Kubernetes' controllers do: never adopt into an owner that is gone or going).
            if not adoption:
                adoption.append(asyncio.ensure_future(self._still_current(booster)))
            return adoption[0]

        results = await asyncio.gather(
            *(
                ensure_child(
                    client=self.client,
                    cache=self.children[child.kind],
                    desired=child,
                    owner_uid=str(meta.get("uid")),
                    owner=owner,
                    manager=self.field_manager,
                    selector=selector,
                    can_adopt=can_adopt,
                    tolerated=self.tolerated,
                    history=self.removals,
                )
                for child in desired
            ),
            return_exceptions=True,
        )
        servings: dict[str, ChildOutcome] = {}
        taken_over = set(report.taken_over)  # their TakenOver event says what was written: no Updated besides
        for child, result in zip(desired, results, strict=True):
            if isinstance(result, ChildOutcome):
                if child.kind == MODEL_SERVING:
                    servings[child.name] = result
                if result.action == "created":
                    report.created.append(child)
                elif result.action == "adopted":
                    report.adopted.append(child)
                elif result.action in ("updated", "replaced") and not result.removed and child.ref() not in taken_over:
                    report.updated.append(child)
                if result.removed:
                    report.removed.append(f"{child.ref()}: {'; '.join(result.removed)}")
                if result.kept:
                    report.kept.append(f"{child.ref()}: {'; '.join(result.kept)}")
                if result.action != "unchanged":
                    self.metrics.children_applied.labels(kind=child.kind.kind, action=result.action).inc()
            elif isinstance(result, NotControlledError):
                report.not_owned.append(conflict_message(result, owner=str(meta.get("name"))))
                self._watch_blocker(booster, result)
            elif isinstance(result, ChildTerminating):
                report.terminating.append(str(result))
            elif isinstance(result, ApiError) and refused_as_terminating(result):
                report.namespace_terminating = True
                self.namespaces.refused(child.namespace)
            elif isinstance(result, ApiError) and result.status == 422:
                report.refused.append(
                    f"the API server refused {child.ref()}: {result.message}; this is not retried until the "
                    "ModelBooster or the child changes"
                )
            elif isinstance(result, ApiError):
                report.failures.append(f"applying {child.ref()} failed: {result}")
                report.unavailable += is_unavailable(result)
            elif isinstance(result, BaseException):
                raise result
        return servings

    async def _still_current(self, booster: dict[str, Any]) -> bool:
        """Whether the ModelBooster, read afresh, is the same object and not being deleted."""
        meta = booster["metadata"]
        try:
            fresh = await self.client.get(MODEL_BOOSTER, str(meta.get("namespace")), str(meta.get("name")))
        except ApiError as error:
            if error.not_found:
                return False
            raise
        fresh_meta = metadata(fresh)
        return fresh_meta.get("uid") == meta.get("uid") and not fresh_meta.get("deletionTimestamp")

    def _watch_blocker(self, booster: dict[str, Any], error: NotControlledError) -> None:
        child = error.desired
        self.blockers.watch(child.kind, child.namespace, child.name, resource_version=error.resource_version,
                            owner=ObjectKey.of(booster))  # fmt: skip

    async def _prune(self, booster: dict[str, Any], uid: str, desired: Sequence[Desired], report: _Report) -> None:
        """Delete the children this ModelBooster controls and no longer wants, and its orphans it does not want
        (as a ReplicaSet adopts matching orphans and then scales away the excess): objects of its model without a
        controller reference, e.g. a removed backend's children left by `--cascade=orphan`."""
        wanted = {(child.kind, child.name) for child in desired}
        meta = booster["metadata"]
        model_key = f"{meta.get('namespace')}/{meta.get('name')}"
        stale: list[tuple[Kind, dict[str, Any]]] = []
        orphans = False
        for kind, informer in self.children.items():
            for live in informer.by_index(UID_INDEX, uid):
                name = str(metadata(live).get("name"))
                if (kind, name) not in wanted and is_controlled_by(live, uid):
                    stale.append((kind, live))
            for live in informer.by_index(MODEL_INDEX, model_key):
                name = str(metadata(live).get("name"))
                if (kind, name) not in wanted and controller_ref(live) is None and (kind, live) not in stale:
                    stale.append((kind, live))
                    orphans = True
        if not stale:
            return
        if orphans and not await self._still_current(booster):
            return  # never act for an owner that is gone or going
        results = await asyncio.gather(
            *(
                delete_child(client=self.client, cache=self.children[kind], kind=kind, live=live)
                for kind, live in stale
            ),
            return_exceptions=True,
        )
        for (kind, live), result in zip(stale, results, strict=True):
            ref = f"{kind.kind} {(live.get('metadata') or {}).get('name')}"
            if result is True:
                report.deleted.append(ref)
                self.metrics.children_applied.labels(kind=kind.kind, action="deleted").inc()
            elif isinstance(result, ApiError):
                report.failures.append(f"deleting stale {ref} failed: {result}")
                report.unavailable += is_unavailable(result)
            elif isinstance(result, BaseException):
                raise result

    # ------------------------------------------------------------------ status
    def backend_states(self, booster: dict[str, Any]) -> list[BackendState]:
        """One state per backend of the spec (names are required and unique: the CRD's list-map), in order."""
        meta = metadata(booster)
        namespace, model = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        servings = self.children.get(MODEL_SERVING)
        states = []
        for backend in backend_names(booster):
            serving = servings.get(namespace, backend_resource_name(model, backend)) if servings is not None else None
            if serving is not None and not is_controlled_by(serving, str(meta.get("uid"))):
                serving = None
            terminating = serving is not None and bool(metadata(serving).get("deletionTimestamp"))
            states.append(
                BackendState(
                    name=backend,
                    available=serving_available(serving) and not terminating,
                    replicas=serving_replicas(serving),
                    terminating=terminating,
                )
            )
        return states

    async def _write_status(self, booster: dict[str, Any], outcome: Outcome) -> None:
        meta = booster["metadata"]
        current = booster.get("status")
        generation = meta.get("generation")
        desired = booster_status(
            current,
            generation=generation if isinstance(generation, int) else None,
            outcome=outcome,
            backends=self.backend_states(booster),
            now=self._now(),
        )
        if not status_differs(current, desired):
            return
        stored = await self.client.patch(
            MODEL_BOOSTER,
            str(meta.get("namespace") or ""),
            str(meta["name"]),
            {"status": desired},
            subresource="status",
            field_manager=self.field_manager,
        )
        self.boosters.write_through(stored)
        if becomes_initialized(current, desired):
            # Creation to the Initialized condition's lastTransitionTime, as `kubectl get -o yaml` shows both.
            elapsed = seconds_between(meta.get("creationTimestamp"), self._now())
            if elapsed is not None:
                self.metrics.time_to_initialized.observe(max(elapsed, 0.0))

    # ------------------------------------------------------------------ events
    async def _post_events(self, booster: dict[str, Any], report: _Report) -> None:
        for reason, items in (
            ("Created", [child.ref() for child in report.created]),
            ("Updated", [child.ref() for child in report.updated]),
            ("Adopted", [child.ref() for child in report.adopted]),
            ("Deleted", report.deleted),
        ):
            if items:
                await self.recorder.emit(booster, type="Normal", reason=reason, message=_summary(reason, items))
        if report.removed:
            message = "Removed what others added to children: " + "; ".join(report.removed)
            await self.recorder.emit(booster, type="Warning", reason="ForeignFieldsRemoved", message=message)
        if report.kept:
            message = (
                "Left as they are, since someone re-added them after each of 3 removals within 10 minutes (until "
                "the ModelBooster changes; `kubectl get <child> --show-managed-fields -o yaml` shows who): "
                + "; ".join(report.kept)
            )
            await self.recorder.emit(booster, type="Warning", reason="ForeignFieldsKept", message=message)
        for message in report.not_owned:
            await self.recorder.emit(booster, type="Warning", reason="OwnershipConflict", message=message)
        for message in report.terminating:
            await self.recorder.emit(booster, type="Warning", reason="ChildTerminating", message=message)
        if report.taken_over:
            message = (
                "Took over as they run, keeping their pod templates (no pod restarts; they move to the current "
                "rendering with the next change of the spec or a rollout request): " + ", ".join(report.taken_over)
            )
            await self.recorder.emit(booster, type="Normal", reason="TakenOver", message=message)
        for message in report.held_back:
            await self.recorder.emit(booster, type="Warning", reason=REASON_IMMUTABLE, message=message)
        for message in report.refused:
            await self.recorder.emit(booster, type="Warning", reason=REASON_REFUSED, message=message)
        for message in report.failures:
            await self.recorder.emit(booster, type="Warning", reason="ApplyFailed", message=message)


def rollout_hint(key: ObjectKey) -> str:
    """How a user asks for the current rendering of one ModelBooster (§16)."""
    return (
        f"`modelbooster rollout {key.name} -n {key.namespace}` (or `kubectl annotate modelbooster {key.name} -n "
        f'{key.namespace} {ANNOTATION_ROLLOUT}="$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite`)'
    )


def _model_index(obj: dict[str, Any]) -> Iterable[str]:
    meta = metadata(obj)
    model = (meta.get("labels") or {}).get(LABEL_MODEL_NAME)
    return [f"{meta.get('namespace')}/{model}"] if model is not None else []


def _summary(verb: str, items: Iterable[str]) -> str:
    return f"{verb} {', '.join(items)}"


def _pod_mapper(lora: LoraUpdater) -> KeyMapper:
    """A running engine pod wakes its ModelBooster only when it may need runtime LoRA changes."""

    def mapper(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[ObjectKey]:
        if new is None or (new.get("status") or {}).get("phase") != "Running":
            return []
        if (old or {}).get("status") == new.get("status") or not lora.wants_pod_events(pod_owner_uid(new)):
            return []
        key = pod_owner_key(new)
        return [key] if key is not None else []

    return mapper


def condition_counts(boosters: Informer) -> dict[str, int]:
    """`modelbooster_boosters{condition}`: how many ModelBoosters have each condition True (from the cache)."""
    counts = {CONDITION_INITIALIZED: 0, CONDITION_ACTIVE: 0, CONDITION_FAILED: 0}
    for booster in boosters.objects():
        for condition in counts:
            if condition_status(booster.get("status"), condition) == "True":
                counts[condition] += 1
    return counts


def older_counts(older: dict[str, tuple[str, int]]) -> dict[str, int]:
    """`modelbooster_servings_older_rendering{namespace}`, from what each ModelBooster's last reconcile found."""
    counts: dict[str, int] = {}
    for namespace, count in older.values():
        counts[namespace] = counts.get(namespace, 0) + count
    return counts


@dataclass(frozen=True)
class Registered:
    """What registering the ModelBooster controller made, for the process and tests to hold on to."""

    controller: Controller
    reconciler: ModelBoosterReconciler
    dynamic: DynamicSettings


def register_modelbooster(context: Context, settings: ModelBoosterSettings) -> Registered:
    """Register the ModelBooster controller, its informers and its sources with the manager; the child kinds'
    informers run while CRD discovery says the cluster serves them."""
    manager, process = context.manager, context.settings
    namespaces = process.namespaces
    metrics = ModelBoosterMetrics(manager.metrics)
    boosters = manager.informer(MODEL_BOOSTER, namespaces=namespaces, transform=booster_transform)

    def child_informer(kind: Kind) -> Informer:
        return manager.new_informer(
            kind,
            namespaces=namespaces,
            label_selector=CHILD_SELECTOR,
            transform=child_transform(field_manager=process.field_manager),
            indexers={UID_INDEX: label_index(LABEL_MODEL_UID), MODEL_INDEX: _model_index},
        )

    children = ChildInformers(manager, context.discovery, make=child_informer, metrics=metrics, kinds=CHILD_KINDS)
    # Namespaces being deleted (runtime/namespaces.py): across the cluster, or each watched one by name.
    if namespaces:
        namespace_informers = [
            manager.informer(NAMESPACE, field_selector=f"metadata.name={name}", transform=namespace_transform)
            for name in namespaces
        ]
    else:
        namespace_informers = [manager.informer(NAMESPACE, transform=namespace_transform)]
    blockers = BlockerWatches(manager.client, watch_timeout=manager.options.watch_timeout)
    manager.add_cleanup(blockers.close)
    pods = setup_pod_informer(manager, namespaces=namespaces)
    lora = LoraUpdater(pods=pods, recorder=context.recorder, timeout=settings.lora_timeout)
    manager.add_cleanup(lora.close)
    dynamic = DynamicSettings(settings.synthesis())
    reconciler = ModelBoosterReconciler(
        client=manager.client,
        boosters=boosters,
        children=children,
        recorder=context.recorder,
        settings=dynamic,
        field_manager=process.field_manager,
        metrics=metrics,
        lora=lora,
        namespaces=NamespaceLifecycle(namespace_informers),
        blockers=blockers,
    )
    controller = Controller(
        name=CONTROLLER_NAME,
        reconcile=reconciler.reconcile,
        workers=settings.workers,
        rate_limiter=settings.rate_limiter(),
        metrics=manager.metrics,
    )
    controller.watch(boosters, map_to_self, primary=True)
    controller.watch(children, map_to_controller_owner(MODEL_BOOSTER))
    controller.watch(blockers)
    controller.watch(lora.pods, _pod_mapper(lora))
    if settings.config_map:
        config_map = manager.informer(
            CONFIG_MAP,
            namespaces=[process.controller_namespace],
            field_selector=f"metadata.name={settings.config_map}",
        )
        controller.watch(SettingsConfigMap(config_map, dynamic))

    def forget(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if event == "DELETED" and old is not None:
            uid = meta_text(old, "uid")
            context.recorder.forget(uid)
            children.fit.forget(uid)
            lora.forget(uid)
            reconciler.older.pop(uid, None)

    boosters.add_handler(forget)
    manager.add_controller(controller)
    manager.metrics.add_condition_gauge(
        name="modelbooster_servings_older_rendering",
        documentation="ModelServings that keep an older rendering than this version renders (restarted by a "
        "rollout request or the next spec change), by namespace",
        counts=lambda: older_counts(reconciler.older),
        label="namespace",
    )
    manager.metrics.add_condition_gauge(
        name="modelbooster_boosters",
        documentation="ModelBoosters per condition that is True",
        counts=lambda: condition_counts(boosters),
    )
    return Registered(controller, reconciler, dynamic)


PEER: Final = Peer(
    name=CONTROLLER_NAME,
    default_settings=ModelBoosterSettings,
    add_arguments=add_modelbooster_arguments,
    settings_from_args=modelbooster_settings_from_args,
    register=register_modelbooster,
)
