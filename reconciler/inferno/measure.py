"""The closed loop's first step (docs/design/inferno.md §13): before the optimiser runs, fill each targeted
Server's `spec.currentAlloc` (replicas from its target; load from Prometheus when configured) and read its
saturation and latency signals. A Server whose load cannot be measured keeps its last load, and says so."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from pydantic import ValidationError

from reconciler.inferno.load import LoadQueries, measure_load
from reconciler.inferno.metrics import InfernoMetrics
from reconciler.inferno.prometheus import PrometheusClient, QueryFailure
from reconciler.inferno.roles import LiveRole, Side, live_roles
from reconciler.inferno.signals import ServerSignals, SignalQueries, measure_signals
from reconciler.inferno.targets import Scale, TargetProblem, Targets
from reconciler.runtime.apply import is_subset
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text
from shared.api import inferno as api
from shared.decoding import without_status
from shared.engines.series import EngineSeries

REASON_MEASURED: Final = "Measured"
REASON_REPLICAS_ONLY: Final = "ReplicasMeasured"
REASON_METRICS_UNAVAILABLE: Final = "MetricsUnavailable"
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


@dataclass(frozen=True)
class Measurer:
    targets: Targets
    prometheus: PrometheusClient | None  # None: loads are what the Servers say
    queries: LoadQueries
    signal_queries: SignalQueries
    metrics: InfernoMetrics
    client: KubeClient
    servers: Informer  # the Servers' cache: read, and written through with each currentAlloc written
    server_kind: Kind
    field_manager: str
    semaphore: asyncio.Semaphore  # the loop's bound on work in flight, shared with acting

    def _targeted(self, namespace: str) -> list[_Targeted]:
        found = []
        for obj in self.servers.objects(namespace):
            if not (obj.get("spec") or {}).get("targetRef"):
                continue
            try:
                server = api.Server.model_validate(without_status(obj))
            except ValidationError:
                continue  # the run's validation reports it by field
            found.append(_Targeted(obj, server))
        return found

    async def measure(self, namespace: str) -> dict[str, Measurement]:
        """Each targeted Server's measurement, by metadata.name."""
        targeted = self._targeted(namespace)
        results = await asyncio.gather(*(self._measure_bounded(namespace, one) for one in targeted))
        return {one.name: result for one, result in zip(targeted, results, strict=True)}

    async def _measure_bounded(self, namespace: str, one: _Targeted) -> Measurement:
        async with self.semaphore:
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
        if self.prometheus is not None:
            try:
                # The target's engine says which series the default queries read (reconciler/inferno/targets.py).
                engine = await self.targets.engine_of(namespace, ref.name)
            except TargetProblem as problem:
                self.metrics.load_failures.labels("target").inc()
                return Measurement(None, None, False, problem.reason, problem.message)
            queries = self.queries.for_engine(engine)
            measurement, load = await self._measure_load(
                namespace, spec, kind, measurement, queries=queries, existing=existing
            )
            if load is not None:
                owned["load"] = load
            if measurement.load_ok:
                measurement = await self._with_signals(namespace, spec, measurement, engine)
        # Merging `owned` (no nulls) would change nothing: numbers by value (the API server may hand back 60 for
        # the 60.0 we wrote), true is not 1.
        if not is_subset(owned, existing):
            try:
                await self._write_current(one.obj, owned)
            except ApiError as error:
                return Measurement(kind, scale, False, "WriteFailed", f"writing currentAlloc: {error}")
        return measurement

    async def _measure_load(
        self,
        namespace: str,
        spec: api.ServerSpec,
        kind: Kind,
        measurement: Measurement,
        *,
        queries: LoadQueries,
        existing: Any,
    ) -> tuple[Measurement, dict[str, Any] | None]:
        """The load from Prometheus, as `currentAlloc.load` will hold it (None: not measured, the last one kept)."""
        assert self.prometheus is not None
        assert spec.target_ref is not None
        target = spec.target_ref.name
        try:
            load = await measure_load(
                self.prometheus, queries, namespace=namespace, model=spec.model, server=spec.name, target=target
            )
        except QueryFailure as failure:
            self.metrics.load_failures.labels(failure.reason).inc()
            message = f"Prometheus: {failure.message}; keeping the last load, scaling nothing"
            return replace(measurement, load_ok=False, reason=REASON_METRICS_UNAVAILABLE, message=message), None
        measured: dict[str, Any] = {"arrivalRate": round(load.arrival_rate, ARRIVAL_DIGITS)}
        if load.avg_length is not None:
            measured["avgLength"] = load.avg_length
        else:
            last = (existing or {}).get("load") if isinstance(existing, dict) else None
            if not isinstance(last, dict) or "avgLength" not in last:
                measured["avgLength"] = 0  # required with arrivalRate; no traffic has no length yet
        message = f"replicas from {kind.kind} {target}; load from Prometheus over {queries.window}"
        return replace(measurement, reason=REASON_MEASURED, message=message), measured

    async def _with_signals(
        self, namespace: str, spec: api.ServerSpec, measurement: Measurement, engine: EngineSeries
    ) -> Measurement:
        """The saturation and latency signals; a disaggregated target's per role, the Server's own being decode's
        (the queueing model the optimiser sizes is decode's)."""
        assert self.prometheus is not None
        assert spec.target_ref is not None
        if spec.disaggregation is not None:
            by_role = await self._role_signals(namespace, spec, spec.target_ref.name, spec.disaggregation, engine)
            return replace(measurement, signals=by_role["decode"], role_signals=by_role)
        signals = await measure_signals(
            self.prometheus, self.signal_queries.for_engine(engine), namespace=namespace, model=spec.model,
            server=spec.name, target=spec.target_ref.name,
        )  # fmt: skip
        return replace(measurement, signals=signals)

    async def _role_signals(
        self, namespace: str, spec: api.ServerSpec, target: str, pd: api.DisaggregationSpec, engine: EngineSeries
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
