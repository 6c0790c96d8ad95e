"""The closed loop around an optimisation run: measure targeted Servers, then publish and act on the decision
(docs/design/inferno.md §13).

Before the optimiser runs, `measure` fills each targeted Server's `spec.currentAlloc`: `numReplicas` from the
target's scale status, and with Prometheus configured `load.arrivalRate` and `load.avgLength` from vLLM's
metrics (reconciler.inferno.load). A Server whose load cannot be measured keeps its last load.

After the run, `actuate` publishes every Server's decision on /metrics (`inferno_desired_replicas`, for KEDA or
an HPA) and, for Servers with `actuation: Scale`, sets the target's `/scale`: clamped to the bounds, scale-down
stabilised (reconciler.inferno.stabilizer), within the operator's ceilings (reconciler.inferno.ceilings), never on
missing data, never changing an accelerator, and only where someone allowed to scale the target consented and
no other scaler drives it (reconciler.inferno.consent, reconciler.inferno.rivals). Each Server's status says
what happened (`LoadMeasured`, `ScalingActive`); a change of the target is a Normal `Scaled` event, a new reason
not to measure or scale a Warning event (naming who has not consented, or who else scales the target).

With Prometheus, each targeted Server's saturation and latency signals are read too (reconciler.inferno.signals):
`adjust` feeds them to the online estimator and the trend term before the optimiser runs
(reconciler.inferno.correction), and Scale passes the decision through the saturation guardrail before the
stabiliser (reconciler.inferno.guardrail.control); an override is the condition `SaturationOverride`, a Warning
event `SaturationOverride` when its reason changes, and `inferno_saturation_overrides_total{reason}`
(docs/design/inferno.md §14-§16).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from prometheus_client import Gauge
from pydantic import ValidationError

from optimizer.system import Allocation, System
from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.consent import ScalingGate
from reconciler.inferno.correction import Corrections, Observed
from reconciler.inferno.disaggregation import LearntRatio, Ratio
from reconciler.inferno.guardrail import Guarded, control
from reconciler.inferno.load import LoadQueries, measure_load
from reconciler.inferno.metrics import InfernoMetrics
from reconciler.inferno.prometheus import PrometheusClient, QueryFailure
from reconciler.inferno.rivals import Rivals
from reconciler.inferno.roles import SIDES, LiveRole, RolesDecision, Side, decide_roles, live_roles, roles_patch
from reconciler.inferno.roles import describe as describe_roles
from reconciler.inferno.saturation import Assessment, Thresholds, assess, thresholds_for
from reconciler.inferno.signals import ServerSignals, SignalQueries, measure_signals
from reconciler.inferno.stabilizer import Stabilizers
from reconciler.inferno.targets import Scale, TargetProblem, Targets
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.conditions import ConditionStatus, WantedCondition, merge_conditions, status_differs
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text
from shared.api import inferno as api
from shared.durations import parse_duration
from shared.engines.series import EngineSeries

logger = logging.getLogger(__name__)

CONDITION_LOAD_MEASURED: Final = "LoadMeasured"
CONDITION_SCALING_ACTIVE: Final = "ScalingActive"
CONDITION_SATURATION_OVERRIDE: Final = "SaturationOverride"
REASON_NOT_OVERRIDDEN: Final = "NotOverridden"
REASON_SIGNALS_UNAVAILABLE: Final = "SignalsUnavailable"
REASON_GUARD_OFF: Final = "GuardOff"
EVENT_SATURATION_OVERRIDE: Final = "SaturationOverride"
REASON_MEASURED: Final = "Measured"
REASON_REPLICAS_ONLY: Final = "ReplicasMeasured"
REASON_METRICS_UNAVAILABLE: Final = "MetricsUnavailable"
REASON_SCALED: Final = "Scaled"
REASON_AT_DECISION: Final = "AtDecision"
REASON_STABILIZING: Final = "ScaleDownStabilizing"
REASON_UNALLOCATED: Final = "Unallocated"
REASON_ACCELERATOR_UNKNOWN: Final = "AcceleratorUnknown"
REASON_ACCELERATOR_CHANGE: Final = "AcceleratorChangeRecommended"
REASON_SCALE_FAILED: Final = "ScaleFailed"
EVENT_SCALED: Final = "Scaled"
EVENT_LOAD_UNAVAILABLE: Final = "LoadUnavailable"
EVENT_NOT_SCALED: Final = "NotScaled"
# A rate kept to the millirequest per minute: finer digits are noise, and each one would be a write.
ARRIVAL_DIGITS: Final = 3


@dataclass(frozen=True)
class Measurement:
    """What `measure` learnt about one targeted Server (keyed by metadata.name)."""

    kind: Kind | None
    scale: Scale | None
    load_ok: bool  # the load in currentAlloc is this run's (or Prometheus is not used)
    reason: str  # LoadMeasured reason
    message: str
    signals: ServerSignals | None = None  # saturation and latency, with Prometheus
    # A disaggregated target (spec.disaggregation): its two roles as read, and each one's own signals.
    roles: Mapping[Side, LiveRole] | None = None
    role_signals: Mapping[Side, ServerSignals] | None = None


@dataclass(frozen=True)
class _Targeted:
    obj: dict[str, Any]
    server: api.Server

    @property
    def name(self) -> str:
        return meta_text(self.obj, "name")


class ClosedLoop:
    def __init__(
        self,
        *,
        client: KubeClient,
        servers: Informer,
        server_kind: Kind,
        recorder: EventRecorder,
        metrics: InfernoMetrics,
        field_manager: str,
        prometheus: PrometheusClient | None,
        queries: LoadQueries,
        ceilings: Ceilings,
        signal_queries: SignalQueries | None = None,
        concurrency: int = 16,
        now: Callable[[], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.servers = servers
        self.server_kind = server_kind
        self.recorder = recorder
        self.metrics = metrics
        self.field_manager = field_manager
        self.prometheus = prometheus
        self.queries = queries
        self.signal_queries = signal_queries or SignalQueries(window=queries.window)
        self.corrections = Corrections(clock=clock)
        # Per run of a namespace: what `adjust` learnt for each Server's status, the classes' thresholds.
        self._pieces: dict[str, dict[str, dict[str, Any]]] = {}
        self._class_saturation: dict[str, Mapping[str, api.SaturationSpec]] = {}
        self.targets = Targets(client, field_manager=field_manager)
        self.gate = ScalingGate(self.targets, Rivals(client))
        self.ceilings = ceilings
        self.stabilizers = Stabilizers()
        self._learnt: dict[tuple[str, str], LearntRatio] = {}  # per disaggregated Server without a prefill rate
        self._semaphore = asyncio.Semaphore(concurrency)
        self._now = now
        self._clock = clock

    async def close(self) -> None:
        if self.prometheus is not None:
            await self.prometheus.close()

    def forget(self, namespace: str, name: str) -> None:
        self.stabilizers.forget(namespace, name)
        for side in SIDES:
            self.stabilizers.forget(namespace, _role_key(name, side))
        self._learnt.pop((namespace, name), None)
        self.corrections.forget(namespace, name)

    # ------------------------------------------------------------------ measuring
    def _targeted(self, namespace: str) -> list[_Targeted]:
        found = []
        for obj in self.servers.objects(namespace):
            if not (obj.get("spec") or {}).get("targetRef"):
                continue
            try:
                server = api.Server.model_validate({k: v for k, v in obj.items() if k != "status"})
            except ValidationError:
                continue  # the run's validation reports it by field
            found.append(_Targeted(obj, server))
        return found

    async def measure(self, namespace: str) -> dict[str, Measurement]:
        self.gate.new_run()
        targeted = self._targeted(namespace)
        results = await asyncio.gather(*(self._measure_bounded(namespace, one) for one in targeted))
        return {one.name: result for one, result in zip(targeted, results, strict=True)}

    async def _measure_bounded(self, namespace: str, one: _Targeted) -> Measurement:
        async with self._semaphore:
            return await self._measure_one(namespace, one)

    async def _measure_one(self, namespace: str, one: _Targeted) -> Measurement:
        spec = one.server.spec
        assert spec.target_ref is not None
        ref = spec.target_ref
        roles: dict[Side, LiveRole] | None = None
        try:
            kind = await self.targets.kind_of(ref)
            if spec.disaggregation is not None:
                # The roles' replicas, not /scale's serving groups: decode's count is what the optimiser sizes.
                roles = live_roles(await self.targets.read(kind, namespace, ref.name), spec.disaggregation)
                scale = Scale(spec_replicas=roles["decode"].replicas, status_replicas=None)
            else:
                scale = await self.targets.read_scale(kind, namespace, ref.name)
        except TargetProblem as problem:
            self.metrics.load_failures.labels("target").inc()
            return Measurement(None, None, False, problem.reason, problem.message)
        existing = (one.obj.get("spec") or {}).get("currentAlloc")
        # What we write: the replica count and the load's two measured fields, merged into what is there (the
        # accelerator, the COVs and anything else are the user's; a merge patch leaves them alone even when
        # the user edits them while we measure). A Server without currentAlloc gets one, accelerator unknown.
        owned: dict[str, Any] = {"numReplicas": scale.observed}
        if not isinstance(existing, dict):
            owned["accelerator"] = ""
        measurement = Measurement(
            kind, scale, True, REASON_REPLICAS_ONLY, f"replicas from {kind.kind} {ref.name}; load as written",
            roles=roles,
        )  # fmt: skip
        queries, signal_queries, engine = self.queries, self.signal_queries, None
        if self.prometheus is not None:
            try:
                # The target's engine says which series the default queries read (reconciler.inferno.targets).
                engine = await self.targets.engine_of(namespace, ref.name)
                queries, signal_queries = queries.for_engine(engine), signal_queries.for_engine(engine)
            except TargetProblem as problem:
                self.metrics.load_failures.labels("target").inc()
                return Measurement(None, None, False, problem.reason, problem.message)
            try:
                load = await measure_load(
                    self.prometheus,
                    queries,
                    namespace=namespace,
                    model=spec.model,
                    server=spec.name,
                    target=ref.name,
                )
            except QueryFailure as failure:
                self.metrics.load_failures.labels(failure.reason).inc()
                message = f"Prometheus: {failure.message}; keeping the last load, scaling nothing"
                measurement = Measurement(kind, scale, False, REASON_METRICS_UNAVAILABLE, message, roles=roles)
            else:
                measured: dict[str, Any] = {"arrivalRate": round(load.arrival_rate, ARRIVAL_DIGITS)}
                if load.avg_length is not None:
                    measured["avgLength"] = load.avg_length
                else:
                    last = (existing or {}).get("load") if isinstance(existing, dict) else None
                    if not isinstance(last, dict) or "avgLength" not in last:
                        measured["avgLength"] = 0  # required with arrivalRate; no traffic has no length yet
                owned["load"] = measured
                measurement = Measurement(
                    kind,
                    scale,
                    True,
                    REASON_MEASURED,
                    f"replicas from {kind.kind} {ref.name}; load from Prometheus over {self.queries.window}",
                    roles=roles,
                )
        if self.prometheus is not None and measurement.load_ok and roles is not None:
            assert spec.disaggregation is not None
            by_role = await self._role_signals(namespace, spec, ref.name, spec.disaggregation, engine)
            # The Server's own signals are its decode pods': the queueing model the optimiser sizes is decode's.
            measurement = replace(measurement, signals=by_role["decode"], role_signals=by_role)
        elif self.prometheus is not None and measurement.load_ok:
            signals = await measure_signals(
                self.prometheus, signal_queries, namespace=namespace, model=spec.model, server=spec.name,
                target=ref.name,
            )  # fmt: skip
            measurement = replace(measurement, signals=signals)
        if not _contains(existing, owned):
            try:
                await self._write_current(one.obj, owned)
            except ApiError as error:
                return Measurement(kind, scale, False, "WriteFailed", f"writing currentAlloc: {error}")
        return measurement

    async def _role_signals(
        self, namespace: str, spec: api.ServerSpec, target: str, pd: api.DisaggregationSpec,
        engine: EngineSeries | None,
    ) -> dict[Side, ServerSignals]:
        """Each role's signals, from the signal queries narrowed to its pods (`$role`); prefill's with its
        prompt-token rate."""
        assert self.prometheus is not None
        queries = self.signal_queries.for_role(engine)
        prefill, decode = await asyncio.gather(
            *(
                measure_signals(
                    self.prometheus, queries, namespace=namespace, model=spec.model, server=spec.name, target=target,
                    role=role, prompt_tokens=role == pd.prefill_role,
                )
                for role in (pd.prefill_role, pd.decode_role)
            )
        )
        return {"prefill": prefill, "decode": decode}

    async def _write_current(self, obj: dict[str, Any], owned: dict[str, Any]) -> None:
        stored = await self.client.patch(
            self.server_kind,
            meta_text(obj, "namespace"),
            meta_text(obj, "name"),
            {"spec": {"currentAlloc": owned}},
            field_manager=self.field_manager,
        )
        self.servers.write_through(stored)

    # ------------------------------------------------------------------ correcting
    def adjust(
        self,
        namespace: str,
        system: System,
        *,
        servers: Mapping[str, dict[str, Any]],
        measurements: Mapping[str, Measurement],
        corrections: Mapping[str, api.ProfileCorrection],
        saturation: Mapping[str, api.SaturationSpec],
    ) -> None:
        """Before the optimiser: learn from this period's signals and size `system` with what was learnt and
        the trends; remember the classes' saturation thresholds for `actuate`."""
        observed = {
            name: Observed(
                signals=measurement.signals,
                replicas=measurement.scale.observed if measurement.scale is not None else 0,
                load_ok=measurement.load_ok,
            )
            for name, measurement in measurements.items()
        }
        self._pieces[namespace] = self.corrections.adjust(
            namespace, system, servers=servers, observed=observed, corrections=corrections
        )
        self._class_saturation[namespace] = saturation

    # ------------------------------------------------------------------ acting
    async def actuate(
        self,
        namespace: str,
        *,
        servers: Mapping[str, dict[str, Any]],
        allocations: Mapping[str, Allocation],
        measurements: Mapping[str, Measurement],
    ) -> list[str]:
        """Publish every Server's decision and scale the targets that ask for it; the names of Servers whose
        load is stale (for the run's message)."""
        series: set[tuple[Gauge, tuple[str, ...]]] = set()
        stale: list[str] = []
        jobs = []
        for spec_name, obj in servers.items():
            name = meta_text(obj, "name")
            allocation = allocations.get(spec_name)
            measurement = measurements.get(name)
            self._publish(namespace, name, obj, allocation=allocation, measurement=measurement, series=series)
            if measurement is not None and not measurement.load_ok:
                stale.append(name)
            if measurement is not None:
                jobs.append(self._act_bounded(namespace, obj, allocation, measurement, series))
        await asyncio.gather(*jobs)
        self.metrics.publish_servers(namespace, series)
        return sorted(stale)

    def _publish(
        self,
        namespace: str,
        name: str,
        obj: dict[str, Any],
        *,
        allocation: Allocation | None,
        measurement: Measurement | None,
        series: set[tuple[Gauge, tuple[str, ...]]],
    ) -> None:
        def put(gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
            gauge.labels(*labels).set(value)
            series.add((gauge, labels))

        spec = obj.get("spec") or {}
        ref = spec.get("targetRef") or {}
        target_kind, target_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        accelerator = allocation.accelerator if allocation is not None else ""
        replicas = allocation.num_replicas if allocation is not None else 0
        put(self.metrics.desired_replicas, (namespace, name, target_kind, target_name, accelerator), replicas)
        put(self.metrics.unallocated, (namespace, name), 0 if allocation is not None and accelerator else 1)
        load = ((spec.get("currentAlloc") or {}).get("load")) or {}
        if isinstance(load.get("arrivalRate"), int | float):
            put(self.metrics.arrival_rate, (namespace, name), float(load["arrivalRate"]))
        if isinstance(load.get("avgLength"), int | float):
            put(self.metrics.avg_length, (namespace, name), float(load["avgLength"]))
        if allocation is not None and accelerator and allocation.itl_average:
            put(self.metrics.predicted_itl, (namespace, name), allocation.itl_average / 1000.0)
        if measurement is not None:
            put(self.metrics.load_stale, (namespace, name), 0 if measurement.load_ok else 1)
            if measurement.scale is not None:
                put(
                    self.metrics.current_replicas,
                    (namespace, name, target_kind, target_name),
                    measurement.scale.observed,
                )

    async def _act_bounded(
        self,
        namespace: str,
        obj: dict[str, Any],
        allocation: Allocation | None,
        measurement: Measurement,
        series: set[tuple[Gauge, tuple[str, ...]]],
    ) -> None:
        async with self._semaphore:
            await self._act(namespace, obj, allocation, measurement, series)

    async def _act(
        self,
        namespace: str,
        obj: dict[str, Any],
        allocation: Allocation | None,
        measurement: Measurement,
        series: set[tuple[Gauge, tuple[str, ...]]],
    ) -> None:
        spec = obj.get("spec") or {}
        name = meta_text(obj, "name")
        load_status: ConditionStatus = "True" if measurement.load_ok else "False"
        wanted = [WantedCondition(CONDITION_LOAD_MEASURED, load_status, measurement.reason, measurement.message)]
        status: dict[str, Any] = dict(self._pieces.get(namespace, {}).get(name, {}))
        assessment = self._assess(namespace, spec, measurement)
        if assessment is not None:
            status["saturation"] = _saturation_status(measurement.signals, assessment)
            self.metrics.saturation_pressure.labels(namespace, name).set(round(assessment.pressure, 3))
            series.add((self.metrics.saturation_pressure, (namespace, name)))
        drift = (status.get("performance") or {}).get("drift")
        if isinstance(drift, float):
            self.metrics.profile_drift.labels(namespace, name).set(drift)
            series.add((self.metrics.profile_drift, (namespace, name)))
        if spec.get("actuation") == api.ACTUATION_SCALE:
            scaling = await self._scale(namespace, obj, allocation, measurement)
            wanted.append(scaling.condition)
            if scaling.changed:
                status["lastScaleTime"] = self._now()
            if scaling.condition.status == "False":
                labels = (namespace, name, scaling.condition.reason)
                self.metrics.scale_blocked.labels(*labels).set(1)
                series.add((self.metrics.scale_blocked, labels))
            if scaling.guard is not None:
                wanted.append(await self._override_condition(obj, scaling.guard))
            status.update(scaling.status)
        await self._report(obj, wanted, status)

    def _assess(self, namespace: str, spec: Mapping[str, Any], measurement: Measurement) -> Assessment | None:
        """This period's saturation of a Server's pods against its thresholds; None when blind or turned off."""
        if measurement.signals is None or measurement.scale is None:
            return None
        thresholds = self._thresholds(namespace, spec)
        if thresholds is None:
            return None
        return assess(measurement.signals.saturation, thresholds, replicas=measurement.scale.observed)

    def _thresholds(self, namespace: str, spec: Mapping[str, Any]) -> Thresholds | None:
        own = spec.get("saturation")
        try:
            server = api.SaturationSpec.model_validate(own) if isinstance(own, dict) else None
        except ValidationError:
            server = None  # the run's validation reports it
        service_class = self._class_saturation.get(namespace, {}).get(str(spec.get("class") or ""))
        return thresholds_for(server, service_class)

    async def _override_condition(self, obj: dict[str, Any], guarded: Guarded) -> WantedCondition:
        """The SaturationOverride condition; a Warning event and the metric when the guardrail overrules."""
        if guarded.override is None:
            reason = REASON_SIGNALS_UNAVAILABLE if "unavailable" in guarded.message else REASON_NOT_OVERRIDDEN
            return WantedCondition(CONDITION_SATURATION_OVERRIDE, "False", reason, guarded.message)
        self.metrics.saturation_overrides.labels(guarded.override).inc()
        conditions = (obj.get("status") or {}).get("conditions") or ()
        before: dict[str, Any] = next((c for c in conditions if c.get("type") == CONDITION_SATURATION_OVERRIDE), {})
        if before.get("status") != "True" or before.get("reason") != guarded.override:
            await self.recorder.emit(obj, type="Warning", reason=EVENT_SATURATION_OVERRIDE, message=guarded.message)
        return WantedCondition(CONDITION_SATURATION_OVERRIDE, "True", guarded.override, guarded.message)

    async def _scale(
        self, namespace: str, obj: dict[str, Any], allocation: Allocation | None, measurement: Measurement
    ) -> _Scaling:
        spec = obj.get("spec") or {}
        ref = spec.get("targetRef") or {}
        target = f"{ref.get('kind')} {ref.get('name')}"
        if measurement.kind is None or measurement.scale is None:
            return _Scaling.blocked(measurement.reason, f"not scaling: {measurement.message}")
        if not measurement.load_ok:
            return _Scaling.blocked(REASON_METRICS_UNAVAILABLE, f"not scaling {target} on missing data")
        if allocation is None or not allocation.accelerator:
            message = f"the last run could not place this server; {target} left as is"
            return _Scaling.blocked(REASON_UNALLOCATED, message)
        current_accelerator = str((spec.get("currentAlloc") or {}).get("accelerator") or "")
        if not current_accelerator:
            return _Scaling.blocked(
                REASON_ACCELERATOR_UNKNOWN,
                f"set spec.currentAlloc.accelerator to the accelerator {target} runs on; the optimiser recommends "
                f"{allocation.num_replicas} x {allocation.accelerator}",
            )
        if allocation.accelerator != current_accelerator:
            return _Scaling.blocked(
                REASON_ACCELERATOR_CHANGE,
                f"the optimiser recommends {allocation.num_replicas} x {allocation.accelerator} instead of "
                f"{current_accelerator}; Scale never changes an accelerator: move {target} yourself",
            )
        kind, scale = measurement.kind, measurement.scale
        name = meta_text(obj, "name")
        server_min, server_max = spec.get("minReplicas"), spec.get("maxReplicas")
        if measurement.roles is not None:
            # The roles carry their own bounds (spec.disaggregation); the Server's are for a /scale target only.
            pd = spec.get("disaggregation") or {}
            server_min, server_max = 0, max(int((pd.get(side) or {}).get("maxReplicas") or 1) for side in SIDES)
        try:
            bounds = await self.gate.admit(
                kind, namespace, str(ref.get("name")), server=name, server_min=server_min, server_max=server_max,
                rival_servers=self._rival_servers(namespace, name, kind, ref),
            )  # fmt: skip
        except TargetProblem as problem:
            return _Scaling.blocked(problem.reason, problem.message)
        if measurement.roles is not None:
            return await self._scale_roles(namespace, obj, allocation, measurement)
        bounds = self.ceilings.limit(bounds)
        asked = parse_duration(spec.get("scaleDownStabilization") or api.DEFAULT_SCALE_DOWN_STABILIZATION) / 1e9
        stabilizer = self.stabilizers.get(namespace, name, window=self.ceilings.window(asked))
        thresholds = self._thresholds(namespace, spec)
        stabilized, guarded = control(
            decided=allocation.num_replicas, current=scale.spec_replicas, minimum=bounds.minimum,
            maximum=bounds.maximum, assessment=self._assess(namespace, spec, measurement), stabilizer=stabilizer,
            now=self._clock(),
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
                return _Scaling.active(
                    REASON_STABILIZING, f"{target} stays at {replicas} within the window ({detail})", guard=guard
                )
            return _Scaling.active(REASON_AT_DECISION, f"{target} at {replicas} ({detail})", guard=guard)
        try:
            await self.targets.write_scale(kind, namespace, str(ref.get("name")), replicas)
        except ApiError as error:
            return _Scaling.blocked(REASON_SCALE_FAILED, f"setting {target} scale to {replicas}: {error}")
        direction = "up" if replicas > scale.spec_replicas else "down"
        self.metrics.scale_changes.labels(direction).inc()
        message = f"scaled {target} from {scale.spec_replicas} to {replicas} replicas ({detail})"
        logger.info("inferno %s/%s: %s", namespace, name, message)
        await self.recorder.emit(obj, type="Normal", reason=EVENT_SCALED, message=message)
        return _Scaling(
            WantedCondition(CONDITION_SCALING_ACTIVE, "True", REASON_SCALED, message), changed=True, guard=guard
        )

    async def _scale_roles(
        self, namespace: str, obj: dict[str, Any], allocation: Allocation, measurement: Measurement
    ) -> _Scaling:
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
            return _Scaling.blocked(problem.reason, problem.message)
        asked = parse_duration(spec.get("scaleDownStabilization") or api.DEFAULT_SCALE_DOWN_STABILIZATION) / 1e9
        window = self.ceilings.window(asked)
        stabilizers = {side: self.stabilizers.get(namespace, _role_key(name, side), window=window) for side in SIDES}
        decision = decide_roles(
            spec=pd, decided_decode=allocation.num_replicas, live=live, signals=measurement.role_signals or {},
            thresholds=self._thresholds(namespace, spec), ceilings=self.ceilings, stabilizers=stabilizers,
            learnt=self._learnt_ratio(namespace, name, pd), now=self._clock(),
        )  # fmt: skip
        status = _roles_status(decision, learnt=self._learnt.get((namespace, name)) if pd.prefill_tokens_per_second
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
            return _Scaling.active(
                REASON_AT_DECISION, f"{target} roles at {describe_roles(decision)} ({detail})", guard=guard,
                status=status,
            )  # fmt: skip
        try:
            await self.targets.write_roles(kind, namespace, str(ref.get("name")), patch)
        except ApiError as error:
            return _Scaling(
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
        return _Scaling(
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

    async def _report(self, obj: dict[str, Any], wanted: Sequence[WantedCondition], extra: dict[str, Any]) -> None:
        """Write the Server's conditions when they changed; a new reason for not measuring or not scaling is
        also a Warning event (once, not every period)."""
        old_status = obj.get("status") or {}
        previous = {str(c.get("type")): c for c in old_status.get("conditions") or () if isinstance(c, dict)}
        for want in wanted:
            before = previous.get(want.type) or {}
            if (
                want.type in (CONDITION_LOAD_MEASURED, CONDITION_SCALING_ACTIVE)
                and want.status == "False"
                and (before.get("status") != "False" or before.get("reason") != want.reason)
            ):
                event = EVENT_LOAD_UNAVAILABLE if want.type == CONDITION_LOAD_MEASURED else EVENT_NOT_SCALED
                await self.recorder.emit(obj, type="Warning", reason=event, message=want.message)
        conditions = merge_conditions(old_status.get("conditions"), wanted, generation=None, now=self._now())
        status: dict[str, Any] = {"conditions": conditions}
        status.update(extra)
        if not status_differs(old_status, status):
            return
        try:
            stored = await self.client.patch(
                self.server_kind,
                meta_text(obj, "namespace"),
                meta_text(obj, "name"),
                {"status": status},
                subresource="status",
                field_manager=self.field_manager,
            )
        except ApiError as error:
            logger.warning("inferno: writing the status of Server %s failed: %s", meta_text(obj, "name"), error)
            return
        self.servers.write_through(stored)


def _contains(value: Any, part: Any) -> bool:
    """Whether merging `part` into `value` (a JSON merge patch without nulls) would change nothing."""
    if isinstance(part, dict):
        return isinstance(value, dict) and all(_contains(value.get(key), item) for key, item in part.items())
    # Numbers compare by value (the API server may hand back 60 for the 60.0 we wrote); true is not 1.
    return bool(value == part) and isinstance(value, bool) == isinstance(part, bool)


def _saturation_status(signals: ServerSignals | None, assessment: Assessment) -> dict[str, Any]:
    found = {
        "kvCacheUsage": None if signals is None or signals.kv_cache is None else round(signals.kv_cache, 2),
        "waiting": None if signals is None or signals.waiting is None else round(signals.waiting, 1),
        "running": None if signals is None or signals.running is None else round(signals.running, 1),
        "pressure": round(assessment.pressure, 2),
    }
    return {key: value for key, value in found.items() if value is not None}


def _role_key(name: str, side: Side) -> str:
    """A role's stabiliser key beside its Server's ("/" is in no object name)."""
    return f"{name}/{side}"


def _ratio_text(ratio: float | None) -> str:
    return "undefined (no decode replica)" if ratio is None else f"{ratio:.2f}"


def _roles_status(decision: RolesDecision, *, learnt: LearntRatio | None) -> dict[str, Any]:
    roles = []
    for one in decision:
        entry: dict[str, Any] = {"name": one.role.name, "side": one.side, "replicas": one.replicas, "need": one.need}
        signals = one.signals
        if signals is not None:
            found = {
                "kvCacheUsage": signals.kv_cache, "waiting": signals.waiting, "running": signals.running,
                "promptTokensPerSecond": signals.prompt_tokens_per_second,
            }  # fmt: skip
            entry.update({key: round(value, 2) for key, value in found.items() if value is not None})
        if one.assessment is not None:
            entry["pressure"] = round(one.assessment.pressure, 2)
        roles.append(entry)
    status: dict[str, Any] = {"roles": roles}
    if decision.ratio is not None:
        status["ratio"] = round(decision.ratio, 3)
    if learnt is not None:
        status["learntRatio"] = round(learnt.value, 3)
    return status


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


@dataclass(frozen=True)
class _Scaling:
    condition: WantedCondition
    changed: bool = False
    guard: Guarded | None = None  # what the guardrail did; None: it did not look (blocked, or turned off)
    status: Mapping[str, Any] = field(default_factory=dict)  # what a disaggregated target's roles report

    @classmethod
    def blocked(cls, reason: str, message: str) -> _Scaling:
        return cls(WantedCondition(CONDITION_SCALING_ACTIVE, "False", reason, message))

    @classmethod
    def active(
        cls, reason: str, message: str, *, guard: Guarded | None = None, status: Mapping[str, Any] | None = None
    ) -> _Scaling:
        return cls(WantedCondition(CONDITION_SCALING_ACTIVE, "True", reason, message), guard=guard,
                   status=status or {})  # fmt: skip
