"""The closed loop's Scale actuation (docs/design/inferno.md §13, §14, §19): for a Server with `actuation: Scale`,
set its target's replicas (or a disaggregated target's two roles) from the decision: clamped to the bounds,
through the saturation guardrail and the scale-down stabiliser, within the operator's ceilings, never on missing
data, never changing an accelerator, and only where consent is given and no other scaler drives the target.
The stabilisers and learnt ratios are per Server, kept here and dropped by the loop when the Server is gone."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from optimizer.system import Allocation
from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.consent import ScalingGate
from reconciler.inferno.decide import Adjusted, ServerDecision
from reconciler.inferno.disaggregation import LearntRatio, Ratio
from reconciler.inferno.guardrail import Guarded, control
from reconciler.inferno.measure import REASON_METRICS_UNAVAILABLE, Measurement
from reconciler.inferno.metrics import InfernoMetrics
from reconciler.inferno.report import CONDITION_SCALING_ACTIVE, roles_status
from reconciler.inferno.roles import SIDES, RolesDecision, Side, decide_roles, live_roles, roles_patch
from reconciler.inferno.roles import describe as describe_roles
from reconciler.inferno.stabilizer import Stabilizers
from reconciler.inferno.targets import Bounds, Scale, TargetProblem, Targets
from reconciler.runtime.client import ApiError
from reconciler.runtime.conditions import WantedCondition
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text
from shared.api import inferno as api
from shared.durations import parse_duration

logger = logging.getLogger(__name__)

REASON_SCALED: Final = "Scaled"
REASON_AT_DECISION: Final = "AtDecision"
REASON_STABILIZING: Final = "ScaleDownStabilizing"
REASON_UNALLOCATED: Final = "Unallocated"
REASON_ACCELERATOR_UNKNOWN: Final = "AcceleratorUnknown"
REASON_ACCELERATOR_CHANGE: Final = "AcceleratorChangeRecommended"
REASON_SCALE_FAILED: Final = "ScaleFailed"
EVENT_SCALED: Final = "Scaled"


@dataclass(frozen=True)
class Scaling:
    condition: WantedCondition
    changed: bool = False
    guard: Guarded | None = None  # what the guardrail did; None: it did not look (blocked, or turned off)
    status: Mapping[str, Any] = field(default_factory=dict)  # what a disaggregated target's roles report

    @classmethod
    def blocked(cls, reason: str, message: str) -> Scaling:
        return cls(WantedCondition(CONDITION_SCALING_ACTIVE, "False", reason, message))

    @classmethod
    def active(
        cls, reason: str, message: str, *, guard: Guarded | None = None, status: Mapping[str, Any] | None = None
    ) -> Scaling:
        return cls(WantedCondition(CONDITION_SCALING_ACTIVE, "True", reason, message), guard=guard,
                   status=status or {})  # fmt: skip


@dataclass
class Actuator:
    servers: Informer  # the Servers' cache, for the other Servers that name the same target
    targets: Targets
    gate: ScalingGate
    ceilings: Ceilings
    recorder: EventRecorder
    metrics: InfernoMetrics
    clock: Callable[[], float] = time.monotonic
    stabilizers: Stabilizers = field(default_factory=Stabilizers)
    # Per disaggregated Server without a measured prefill rate.
    _learnt: dict[tuple[str, str], LearntRatio] = field(default_factory=dict)

    def forget(self, namespace: str, name: str) -> None:
        """Drop what was kept for a Server that is gone."""
        self.stabilizers.forget(namespace, name)
        for side in SIDES:
            self.stabilizers.forget(namespace, _role_key(name, side))
        self._learnt.pop((namespace, name), None)

    async def scale(self, namespace: str, decision: ServerDecision, adjusted: Adjusted) -> Scaling:
        cleared = clear(decision)
        if isinstance(cleared, Scaling):
            return cleared
        obj, measurement = decision.obj, decision.measurement
        spec = obj.get("spec") or {}
        ref = spec.get("targetRef") or {}
        name = meta_text(obj, "name")
        server_min, server_max = spec.get("minReplicas"), spec.get("maxReplicas")
        if measurement.roles is not None:
            # The roles carry their own bounds (spec.disaggregation); the Server's are for a /scale target only.
            pd = spec.get("disaggregation") or {}
            server_min, server_max = 0, max(int((pd.get(side) or {}).get("maxReplicas") or 1) for side in SIDES)
        kind = cleared.kind
        try:
            bounds = await self.gate.admit(
                kind, namespace, str(ref.get("name")), server=name, server_min=server_min, server_max=server_max,
                rival_servers=self._rival_servers(namespace, name, kind, ref),
            )  # fmt: skip
        except TargetProblem as problem:
            return Scaling.blocked(problem.reason, problem.message)
        if measurement.roles is not None:
            return await self._scale_roles(namespace, obj, cleared.allocation, measurement, adjusted)
        return await self._scale_target(
            namespace, decision, cleared, adjusted=adjusted, bounds=self.ceilings.limit(bounds)
        )

    async def _scale_target(
        self, namespace: str, decision: ServerDecision, cleared: Cleared, *, adjusted: Adjusted, bounds: Bounds
    ) -> Scaling:
        """A /scale target: the decision through the guardrail, the stabiliser and the step ceiling, then set."""
        obj, measurement = decision.obj, decision.measurement
        kind, scale, allocation = cleared.kind, cleared.scale, cleared.allocation
        spec = obj.get("spec") or {}
        ref = spec.get("targetRef") or {}
        target = f"{ref.get('kind')} {ref.get('name')}"
        name = meta_text(obj, "name")
        asked = parse_duration(spec.get("scaleDownStabilization") or api.DEFAULT_SCALE_DOWN_STABILIZATION) / 1e9
        stabilizer = self.stabilizers.get(namespace, name, window=self.ceilings.window(asked))
        thresholds = adjusted.thresholds(spec)
        stabilized, guarded = control(
            decided=allocation.num_replicas, current=scale.spec_replicas, minimum=bounds.minimum,
            maximum=bounds.maximum, assessment=adjusted.assess(spec, measurement), stabilizer=stabilizer,
            now=self.clock(),
        )  # fmt: skip
        guard = guarded if thresholds is not None else None
        if thresholds is None:
            guarded = Guarded(guarded.replicas, None, "the saturation guard is off for this Server")
        desired = guarded.replicas
        # The operator's ceiling on one decision's step applies last, to what the guardrail and stabiliser chose.
        replicas = self.ceilings.step(current=scale.spec_replicas, wanted=stabilized)
        detail = f"decided {allocation.num_replicas}, bounds {bounds.minimum}..{bounds.maximum} of {bounds.source}"
        if guarded.override is not None:
            detail += f"; guardrail: {guarded.override}"
        if replicas != stabilized:
            detail += f"; one decision moves it by at most {abs(replicas - scale.spec_replicas)}"
        if replicas == scale.spec_replicas:
            if replicas > desired:
                return Scaling.active(
                    REASON_STABILIZING, f"{target} stays at {replicas} within the window ({detail})", guard=guard
                )
            return Scaling.active(REASON_AT_DECISION, f"{target} at {replicas} ({detail})", guard=guard)
        try:
            await self.targets.write_scale(kind, namespace, str(ref.get("name")), replicas)
        except ApiError as error:
            return Scaling.blocked(REASON_SCALE_FAILED, f"setting {target} scale to {replicas}: {error}")
        direction = "up" if replicas > scale.spec_replicas else "down"
        self.metrics.scale_changes.labels(direction).inc()
        message = f"scaled {target} from {scale.spec_replicas} to {replicas} replicas ({detail})"
        logger.info("inferno %s/%s: %s", namespace, name, message)
        await self.recorder.emit(obj, type="Normal", reason=EVENT_SCALED, message=message)
        return Scaling(
            WantedCondition(CONDITION_SCALING_ACTIVE, "True", REASON_SCALED, message), changed=True, guard=guard
        )

    async def _scale_roles(
        self, namespace: str, obj: dict[str, Any], allocation: Allocation, measurement: Measurement, adjusted: Adjusted
    ) -> Scaling:
        """A disaggregated target: decide both roles and set the ones that change (reconciler.inferno.roles)."""
        spec = obj.get("spec") or {}
        ref = spec.get("targetRef") or {}
        target = f"{ref.get('kind')} {ref.get('name')}"
        name = meta_text(obj, "name")
        pd = api.DisaggregationSpec.model_validate(spec.get("disaggregation"))
        assert measurement.kind is not None
        kind = measurement.kind
        try:
            # Read again, now: the index and replicas the patch tests are those of this moment.
            live = live_roles(await self.targets.read(kind, namespace, str(ref.get("name"))), pd)
        except TargetProblem as problem:
            return Scaling.blocked(problem.reason, problem.message)
        asked = parse_duration(spec.get("scaleDownStabilization") or api.DEFAULT_SCALE_DOWN_STABILIZATION) / 1e9
        window = self.ceilings.window(asked)
        stabilizers = {side: self.stabilizers.get(namespace, _role_key(name, side), window=window) for side in SIDES}
        decision = decide_roles(
            spec=pd, decided_decode=allocation.num_replicas, live=live, signals=measurement.role_signals or {},
            thresholds=adjusted.thresholds(spec), ceilings=self.ceilings, stabilizers=stabilizers,
            learnt=self._learnt_ratio(namespace, name, pd), now=self.clock(),
        )  # fmt: skip
        status = roles_status(decision, learnt=self._learnt.get((namespace, name)) if pd.prefill_tokens_per_second
                               is None else None)  # fmt: skip
        guard = _combined_guard(decision)
        bounds = ", ".join(f"{one.role.name} {decision.bounds[one.side].minimum}..{decision.bounds[one.side].maximum}"
                           for one in decision)  # fmt: skip
        detail = f"decode decided {allocation.num_replicas}; bounds {bounds}"
        low, high = pd.ratio_bounds
        detail += f"; prefill/decode {_ratio_text(decision.ratio)} within {low:g}..{high:g}"
        if decision.notes:
            detail += "; " + "; ".join(decision.notes)
        if guard is not None and guard.override is not None:
            detail += f"; guardrail: {guard.override}"
        patch = roles_patch(decision)
        if not patch:
            return Scaling.active(
                REASON_AT_DECISION, f"{target} roles at {describe_roles(decision)} ({detail})", guard=guard,
                status=status,
            )  # fmt: skip
        try:
            await self.targets.write_roles(kind, namespace, str(ref.get("name")), patch)
        except ApiError as error:
            return Scaling(
                WantedCondition(
                    CONDITION_SCALING_ACTIVE, "False", REASON_SCALE_FAILED, f"setting {target} roles: {error}"
                ),
                guard=guard,
            )
        for one in decision:
            if one.changed:
                self.metrics.scale_changes.labels("up" if one.replicas > one.role.replicas else "down").inc()
        message = f"scaled {target} roles: {describe_roles(decision)} ({detail})"
        logger.info("inferno %s/%s: %s", namespace, name, message)
        await self.recorder.emit(obj, type="Normal", reason=EVENT_SCALED, message=message)
        return Scaling(
            WantedCondition(CONDITION_SCALING_ACTIVE, "True", REASON_SCALED, message),
            changed=True,
            guard=guard,
            status=status,
        )

    def _learnt_ratio(self, namespace: str, name: str, pd: api.DisaggregationSpec) -> LearntRatio | None:
        """The Server's learnt prefill/decode ratio (None with a measured prefill rate); anew when its band moves."""
        key = (namespace, name)
        if pd.prefill_tokens_per_second is not None:
            self._learnt.pop(key, None)
            return None
        band = Ratio(*pd.ratio_bounds)
        learnt = self._learnt.get(key)
        if learnt is None or learnt.band != band:
            learnt = self._learnt[key] = LearntRatio(band=band)
        return learnt

    def _rival_servers(self, namespace: str, name: str, kind: Kind, ref: Mapping[str, Any]) -> list[str]:
        """The other Servers of the namespace whose Scale actuation names the same target (from the cache)."""
        rivals = []
        for obj in self.servers.objects(namespace):
            spec = obj.get("spec") or {}
            other = spec.get("targetRef") or {}
            if meta_text(obj, "name") == name or spec.get("actuation") != api.ACTUATION_SCALE:
                continue
            if not isinstance(other, dict) or other.get("kind") != kind.kind or other.get("name") != ref.get("name"):
                continue
            api_version = other.get("apiVersion")
            if isinstance(api_version, str) and api_version.rpartition("/")[0] != kind.group:
                continue
            rivals.append(meta_text(obj, "name"))
        return rivals


@dataclass(frozen=True)
class Cleared:
    """What a Server cleared for Scale actuation brings: its target's kind and scale, and where it was placed."""

    kind: Kind
    scale: Scale
    allocation: Allocation


def clear(decision: ServerDecision) -> Scaling | Cleared:
    """Why Scale actuation leaves this Server's target alone before asking anyone (missing data, no placement, a
    decision on another accelerator: Scale changes counts, never hardware), or what it goes on with."""
    spec = decision.obj.get("spec") or {}
    ref = spec.get("targetRef") or {}
    target = f"{ref.get('kind')} {ref.get('name')}"
    allocation, measurement = decision.allocation, decision.measurement
    if measurement.kind is None or measurement.scale is None:
        return Scaling.blocked(measurement.reason, f"not scaling: {measurement.message}")
    if not measurement.load_ok:
        return Scaling.blocked(REASON_METRICS_UNAVAILABLE, f"not scaling {target} on missing data")
    if allocation is None or not allocation.accelerator:
        return Scaling.blocked(REASON_UNALLOCATED, f"the last run could not place this server; {target} left as is")
    current_accelerator = str((spec.get("currentAlloc") or {}).get("accelerator") or "")
    if not current_accelerator:
        return Scaling.blocked(
            REASON_ACCELERATOR_UNKNOWN,
            f"set spec.currentAlloc.accelerator to the accelerator {target} runs on; the optimiser recommends "
            f"{allocation.num_replicas} x {allocation.accelerator}",
        )
    if allocation.accelerator != current_accelerator:
        return Scaling.blocked(
            REASON_ACCELERATOR_CHANGE,
            f"the optimiser recommends {allocation.num_replicas} x {allocation.accelerator} instead of "
            f"{current_accelerator}; Scale never changes an accelerator: move {target} yourself",
        )
    return Cleared(measurement.kind, measurement.scale, allocation)


def _role_key(name: str, side: Side) -> str:
    """A role's stabiliser key beside its Server's ("/" is in no object name)."""
    return f"{name}/{side}"


def _ratio_text(ratio: float | None) -> str:
    return "undefined (no decode replica)" if ratio is None else f"{ratio:.2f}"


def _combined_guard(decision: RolesDecision) -> Guarded | None:
    """One SaturationOverride for both roles: the first role overruled names the reason; the message says each."""
    guards = [(one.role.name, one.guarded) for one in decision if one.guarded is not None]
    if not guards:
        return None
    override = next((g.override for _, g in guards if g.override is not None), None)
    return Guarded(
        replicas=decision.decode.replicas,
        override=override,
        message="; ".join(f"{role}: {g.message}" for role, g in guards),
    )
