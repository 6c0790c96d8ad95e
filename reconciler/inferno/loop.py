"""The closed loop around an optimisation run (docs/design/inferno.md §13): measure the targeted Servers
(reconciler.inferno.measure), decide with what was learnt (reconciler.inferno.decide), and after the optimiser
act on each decision (reconciler.inferno.actuate) and report it (reconciler.inferno.report). Each step hands its
result to the next as a value. What lives from run to run (estimators, trends, stabilisers, learnt ratios) is
kept per Server and dropped by the run that finds the Server gone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from optimizer.system import Allocation, System
from reconciler.inferno.actuate import Actuator
from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.consent import ScalingGate
from reconciler.inferno.correction import Corrections
from reconciler.inferno.decide import Adjusted, ServerDecision, observed
from reconciler.inferno.load import LoadQueries
from reconciler.inferno.measure import Measurement, Measurer
from reconciler.inferno.metrics import InfernoMetrics
from reconciler.inferno.prometheus import PrometheusClient
from reconciler.inferno.report import (
    CONDITION_LOAD_MEASURED,
    Reporter,
    Series,
    publish,
    publish_signals,
    saturation_status,
)
from reconciler.inferno.rivals import Rivals
from reconciler.inferno.signals import SignalQueries
from reconciler.inferno.targets import Targets
from reconciler.runtime.client import KubeClient
from reconciler.runtime.conditions import ConditionStatus, WantedCondition
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text
from shared.api import inferno as api


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
        self.servers = servers
        self.metrics = metrics
        self.prometheus = prometheus
        self.corrections = Corrections(clock=clock)
        targets = Targets(client, field_manager=field_manager)
        self.gate = ScalingGate(targets, Rivals(client))
        self._semaphore = asyncio.Semaphore(concurrency)
        self.measurer = Measurer(
            client=client, servers=servers, server_kind=server_kind, targets=targets, metrics=metrics,
            field_manager=field_manager, prometheus=prometheus, queries=queries,
            signal_queries=signal_queries or SignalQueries(window=queries.window), semaphore=self._semaphore,
        )  # fmt: skip
        self.actuator = Actuator(
            servers=servers, targets=targets, gate=self.gate, ceilings=ceilings, recorder=recorder, metrics=metrics,
            clock=clock,
        )  # fmt: skip
        self.reporter = Reporter(
            client=client, servers=servers, server_kind=server_kind, recorder=recorder, metrics=metrics,
            field_manager=field_manager, now=now,
        )  # fmt: skip
        self._now = now
        # namespace -> the Servers (name -> uid) its last run saw: a name gone, or now another object, is forgotten.
        self._seen: dict[str, dict[str, str]] = {}

    async def close(self) -> None:
        if self.prometheus is not None:
            await self.prometheus.close()

    def forget_namespace(self, namespace: str) -> None:
        """No Optimizer is left in `namespace`: no run will come back for its Servers."""
        self._forget_gone(namespace, {})
        self._seen.pop(namespace, None)

    def _forget_gone(self, namespace: str, present: Mapping[str, str]) -> None:
        for name, uid in self._seen.get(namespace, {}).items():
            if present.get(name) != uid:
                self.actuator.forget(namespace, name)
                self.corrections.forget(namespace, name)

    # ------------------------------------------------------------------ the steps, in order
    async def measure(self, namespace: str) -> dict[str, Measurement]:
        """Step 1, before the optimiser: each targeted Server measured (by metadata.name)."""
        present = {meta_text(obj, "name"): meta_text(obj, "uid") for obj in self.servers.objects(namespace)}
        self._forget_gone(namespace, present)
        self._seen[namespace] = present
        self.gate.new_run()
        return await self.measurer.measure(namespace)

    def adjust(
        self,
        namespace: str,
        system: System,
        *,
        servers: Mapping[str, dict[str, Any]],
        measurements: Mapping[str, Measurement],
        corrections: Mapping[str, api.ProfileCorrection],
        saturation: Mapping[str, api.SaturationSpec],
    ) -> Adjusted:
        """Step 2, before the optimiser: this period's observations learnt from, and `system` sized (in place) with
        what was learnt and the trends; what the later steps need, as one value."""
        pieces = self.corrections.adjust(
            namespace, system, servers=servers, observed=observed(measurements), corrections=corrections
        )
        return Adjusted(pieces=pieces, class_saturation=dict(saturation))

    async def actuate(
        self,
        namespace: str,
        *,
        servers: Mapping[str, dict[str, Any]],
        allocations: Mapping[str, Allocation],
        measurements: Mapping[str, Measurement],
        adjusted: Adjusted,
    ) -> list[str]:
        """Steps 3 and 4, after the optimiser: publish every Server's decision, scale the targets that ask for it
        and report each; the names of Servers whose load is stale (for the run's message)."""
        series: Series = set()
        stale: list[str] = []
        jobs = []
        for spec_name, obj in servers.items():
            name = meta_text(obj, "name")
            allocation = allocations.get(spec_name)
            measurement = measurements.get(name)
            publish(self.metrics, namespace, name, obj, allocation=allocation, measurement=measurement, series=series)
            if measurement is not None and not measurement.load_ok:
                stale.append(name)
            if measurement is not None:
                decision = ServerDecision(obj, allocation, measurement)
                jobs.append(self._act_bounded(namespace, decision, adjusted=adjusted, series=series))
        await asyncio.gather(*jobs)
        self.metrics.publish_servers(namespace, series)
        return sorted(stale)

    async def _act_bounded(
        self, namespace: str, decision: ServerDecision, *, adjusted: Adjusted, series: Series
    ) -> None:
        async with self._semaphore:
            await self._act(namespace, decision, adjusted=adjusted, series=series)

    async def _act(self, namespace: str, decision: ServerDecision, *, adjusted: Adjusted, series: Series) -> None:
        obj, measurement = decision.obj, decision.measurement
        spec = obj.get("spec") or {}
        name = meta_text(obj, "name")
        load_status: ConditionStatus = "True" if measurement.load_ok else "False"
        wanted = [WantedCondition(CONDITION_LOAD_MEASURED, load_status, measurement.reason, measurement.message)]
        status = adjusted.status_of(name)
        assessment = adjusted.assess(spec, measurement)
        if assessment is not None:
            status["saturation"] = saturation_status(measurement.signals, assessment)
        publish_signals(self.metrics, namespace, name, assessment=assessment, status=status, series=series)
        if spec.get("actuation") == api.ACTUATION_SCALE:
            scaling = await self.actuator.scale(namespace, decision, adjusted)
            wanted.append(scaling.condition)
            if scaling.changed:
                status["lastScaleTime"] = self._now()
            if scaling.condition.status == "False":
                labels = (namespace, name, scaling.condition.reason)
                self.metrics.scale_blocked.labels(*labels).set(1)
                series.add((self.metrics.scale_blocked, labels))
            if scaling.guard is not None:
                wanted.append(await self.reporter.override_condition(obj, scaling.guard))
            status.update(scaling.status)
        await self.reporter.write(obj, wanted, status)
