"""The ModelBooster reconcile: one straight pass over plain values (docs/design/reconciler.md §2) — render,
plan LoRA, decide each rollout, apply, prune, then status and Events — each step a function of its own room that
returns what it found; the pass alone decides whether to stop, retry or give up. Its wiring is wiring.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reconciler.modelbooster.apply import Applied, apply_children, record_templates, sorted_results, still_current
from reconciler.modelbooster.children import ChildInformers
from reconciler.modelbooster.events import Event, field_not_served, reconciled
from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING
from reconciler.modelbooster.lora import LoraPlan, LoraUpdater
from reconciler.modelbooster.metrics import ModelBoosterMetrics
from reconciler.modelbooster.pod_selection import selecting_running_pods
from reconciler.modelbooster.prune import Pruned, delete_stale, stale_children
from reconciler.modelbooster.rendering import Invalid, parse, render, render_with_adapters
from reconciler.modelbooster.rollout import (
    Decisions,
    ImmutablePaths,
    Memo,
    decide_all,
    digest_corrections,
    rollout_hint,
)
from reconciler.modelbooster.settings import DynamicSettings
from reconciler.modelbooster.status import (
    REASON_INVALID,
    REASON_KIND_NOT_SERVED,
    Findings,
    Outcome,
    becomes_initialized,
    new_status,
    outcome,
    seconds_between,
)
from reconciler.modelbooster.synthesis import autoscaled_backends
from reconciler.runtime.apply import Desired
from reconciler.runtime.blockers import BlockerWatches
from reconciler.runtime.client import KubeClient
from reconciler.runtime.conditions import rfc3339_now
from reconciler.runtime.controller import ReconcileError, Result, TerminalError
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.foreign import RemovalHistory, ToleratedFields
from reconciler.runtime.informer import Informer
from reconciler.runtime.lean import full_object
from reconciler.runtime.namespaces import NamespaceLifecycle
from reconciler.runtime.objects import metadata
from reconciler.runtime.source import ObjectKey
from shared.api.modelbooster import ModelBooster
from shared.autoscaling_generations import DEFAULT_GENERATION, Generation
from shared.naming import backend_resource_name


@dataclass(frozen=True)
class Refusal:
    """Why a ModelBooster has no children to write: the status reason (also the Warning Event's) and message."""

    reason: str
    message: str


def typed_uid(typed: ModelBooster) -> str:
    return str(typed.metadata.uid or "")


@dataclass(frozen=True)
class Known:
    """A ModelBooster the reconcile has seen under its key: its uid (what the state kept for it is filed under)
    and how many of its ModelServings keep an older rendering (docs/design/reconciler.md §16)."""

    uid: str
    older: int = 0


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
        self.client = client
        self.boosters = boosters
        self.children = children
        self.recorder = recorder
        self.settings = settings
        self.field_manager = field_manager
        self.metrics = metrics
        self.lora = lora
        self.namespaces = namespaces
        self.blockers = blockers
        self._now = now
        # Bounded, keyed by child: what is kept of a gone child ages out.
        self.tolerated = ToleratedFields()
        self.removals = RemovalHistory()
        # The one owner of what is kept per ModelBooster: an entry goes, with the state filed under its uid, when
        # a reconcile finds the ModelBooster gone or another one under its name.
        self.known: dict[ObjectKey, Known] = {}
        self._immutable = ImmutablePaths()
        self._memo = Memo()

    async def reconcile(self, key: ObjectKey) -> Result:
        booster = self._to_reconcile(key)
        if booster is None:
            return Result()
        rendered = self._render(booster)
        if isinstance(rendered, Refusal):
            failed = Outcome(applied_all=False, failure=rendered.message, failure_reason=rendered.reason)
            await self._conclude(booster, failed, [Event("Warning", rendered.reason, rendered.message)])
            raise TerminalError(f"{key}: {rendered.message}")  # a new generation or a served CRD wakes it
        typed, desired = rendered
        desired, pruned_fields = self.children.fit.fit(typed_uid(typed), desired)
        await self._post(booster, [field_not_served(message) for message in pruned_fields])
        plan, decisions = self._decide(booster, typed, desired)
        desired = selecting_running_pods(booster, decisions.applied_to(plan.desired))
        applied = await self._apply(key, booster, desired, decisions)
        if applied.namespace_terminating:
            self.namespaces.skip(key.namespace, "its ModelBoosters are")
            return Result()
        findings = Findings(held_back=decisions.held_back) + applied.findings
        findings += await self._record_templates(decisions, applied)
        self.known[key] = Known(typed_uid(typed), len(decisions.older))
        pruned = await self._prune(booster, desired) if findings.ok else Pruned()
        findings += pruned.findings
        findings += Findings(lora=await self._finish_lora(booster, plan, decisions, applied, run=findings.ok))
        written = replace(applied.written, deleted=pruned.deleted)
        if findings.unavailable_only:
            # The server is (partly) unavailable, e.g. restarting: nothing a user could act on, and a Failed status
            # and an ApplyFailed event now would only be rewritten once it answers; the retry comes at once then.
            await self._post(booster, reconciled(written, replace(findings, failures=())))
            raise ReconcileError("; ".join(findings.failures), outage=True)
        result = outcome(findings, older=decisions.older, servings=len(decisions.renderings),
                         rollout_hint=rollout_hint(key))  # fmt: skip
        await self._conclude(booster, result, reconciled(written, findings))
        if findings.retry:
            raise ReconcileError(findings.retry_message)
        return Result()

    def _to_reconcile(self, key: ObjectKey) -> dict[str, Any] | None:
        """The ModelBooster, unless there is nothing to do: it is gone (its state goes too) or being deleted, its
        namespace is being deleted, or the served kinds are not all known yet (every ModelBooster is woken once
        they are)."""
        cached = self.boosters.get(key.namespace, key.name)
        if cached is None:
            self._gone(key)
            return None
        booster = full_object(cached)
        meta = metadata(booster)
        self._seen(key, str(meta.get("uid") or ""))
        if meta.get("deletionTimestamp"):
            return None
        if self.namespaces.terminating(key.namespace):
            self.namespaces.skip(key.namespace, "its ModelBoosters are")
            return None
        return booster if self.children.settled else None

    def _render(self, booster: dict[str, Any]) -> tuple[ModelBooster, list[Desired]] | Refusal:
        """The children this cluster can take, or why there are none: the spec is invalid, or a kind it needs is
        not served (then nothing of it is written)."""
        typed = parse(booster)
        desired = typed if isinstance(typed, Invalid) else render(typed, self.settings.current,
                                                                  generation=self._generation)  # fmt: skip
        if isinstance(desired, Invalid):
            return Refusal(REASON_INVALID, desired.message)
        assert isinstance(typed, ModelBooster)
        missing = self.children.missing(desired, autoscaled=bool(autoscaled_backends(typed)))
        if missing:
            return Refusal(REASON_KIND_NOT_SERVED, "; ".join(missing))
        return typed, desired

    def _decide(
        self, booster: dict[str, Any], typed: ModelBooster, desired: list[Desired]
    ) -> tuple[LoraPlan, Decisions]:
        """Plan runtime LoRA (which template each such ModelServing carries), then take over, keep, roll or hold
        back each ModelServing."""
        servings = self.children[MODEL_SERVING]
        kept = render_with_adapters(typed, self.lora.kept_templates(typed, servings), self.settings.current,
                                    generation=self._generation, fit=self.children.fit)  # fmt: skip
        plan = self.lora.plan(typed=typed, desired=desired, servings=servings, kept=kept)
        schema = self.children.schema(MODEL_SERVING)
        decisions = decide_all(booster, plan.desired, servings=servings, schema=schema,
                               immutable=self._immutable(schema), templates=plan.templates,
                               manager=self.field_manager, memo=self._memo)  # fmt: skip
        return plan, decisions

    async def _apply(
        self, key: ObjectKey, booster: dict[str, Any], desired: list[Desired], decisions: Decisions
    ) -> Applied:
        """Make every child match; count the writes, watch each same-named object in the way (so that its going
        is noticed at once), and note each namespace that refused a write as being deleted."""
        results = await apply_children(self.client, self.children, booster, desired, manager=self.field_manager,
                                       tolerated=self.tolerated, history=self.removals)  # fmt: skip
        applied = sorted_results(desired, results, owner=key.name, taken_over=decisions.taken_over)
        for kind, action in applied.actions:
            self.metrics.children_applied.labels(kind=kind, action=action).inc()
        for blocked in applied.blocked:
            child = blocked.desired
            self.blockers.watch(child.kind, child.namespace, child.name, resource_version=blocked.resource_version,
                                owner=key)  # fmt: skip
        for namespace in applied.namespace_terminating:
            self.namespaces.refused(namespace)
        return applied

    async def _record_templates(self, decisions: Decisions, applied: Applied) -> Findings:
        corrections = digest_corrections(decisions, applied.servings)
        servings = self.children[MODEL_SERVING]
        return await record_templates(self.client, servings, corrections, manager=self.field_manager)

    @property
    def _generation(self) -> Generation:
        return self.children.generation or DEFAULT_GENERATION

    # ------------------------------------------------------------------ state of gone ModelBoosters
    def _seen(self, key: ObjectKey, uid: str) -> None:
        known = self.known.get(key)
        if known is None or known.uid != uid:
            if known is not None:
                self._forget(known.uid)  # deleted and created anew under the same name since the last reconcile
            self.known[key] = Known(uid)

    def _gone(self, key: ObjectKey) -> None:
        known = self.known.pop(key, None)
        if known is not None:
            self._forget(known.uid)

    def _forget(self, uid: str) -> None:
        self.recorder.forget(uid)
        self.children.fit.forget(uid)
        self.lora.forget(uid)

    # ------------------------------------------------------------------ steps with I/O
    async def _prune(self, booster: dict[str, Any], desired: Sequence[Desired]) -> Pruned:
        stale = stale_children(self.children, booster, desired)
        if not stale.children:
            return Pruned()
        if stale.orphans and not await still_current(self.client, booster):
            return Pruned()  # never act for an owner that is gone or going
        pruned = await delete_stale(self.client, self.children, stale)
        for kind in pruned.kinds:
            self.metrics.children_applied.labels(kind=kind, action="deleted").inc()
        return pruned

    async def _finish_lora(
        self, booster: dict[str, Any], plan: LoraPlan, decisions: Decisions, applied: Applied, *, run: bool
    ) -> tuple[str, ...]:
        """Record which adapters each ModelServing now carries, then (if `run`) bring the running pods up to
        date; the failures. A kept older template says nothing of the adapters it carries."""
        meta = booster["metadata"]
        uid, model = str(meta.get("uid")), str(meta.get("name"))
        in_place = set(applied.servings) - set(decisions.older)
        for backend, template in plan.templates.items():
            if backend_resource_name(model, backend) in in_place:
                self.lora.commit(uid=uid, backend=backend, template=template, target=plan.targets[backend])
        if run and plan.work:
            return tuple(await self.lora.execute(booster, plan.work))
        return ()

    async def _conclude(self, booster: dict[str, Any], result: Outcome, events: Sequence[Event]) -> None:
        # Independent writes: one round trip instead of two.
        await asyncio.gather(self._write_status(booster, result), self._post(booster, events))

    async def _write_status(self, booster: dict[str, Any], result: Outcome) -> None:
        desired = new_status(booster, result, servings=self.children.get(MODEL_SERVING), now=self._now())
        if desired is None:
            return
        meta = booster["metadata"]
        stored = await self.client.patch(MODEL_BOOSTER, str(meta.get("namespace") or ""), str(meta["name"]),
                                         {"status": desired}, subresource="status",
                                         field_manager=self.field_manager)  # fmt: skip
        self.boosters.write_through(stored)
        if becomes_initialized(booster.get("status"), desired):
            # Creation to the Initialized condition's lastTransitionTime, as `kubectl get -o yaml` shows both.
            elapsed = seconds_between(meta.get("creationTimestamp"), self._now())
            if elapsed is not None:
                self.metrics.time_to_initialized.observe(max(elapsed, 0.0))

    async def _post(self, booster: dict[str, Any], events: Sequence[Event]) -> None:
        for event in events:
            await self.recorder.emit(booster, type=event.type, reason=event.reason, message=event.message)
