"""The closed loop's last step (docs/design/inferno.md §13-§14): what each Server's decision and measurement
say, on /metrics (for KEDA or an HPA and for people) and in the Server's status; a new reason not to measure or
not to scale, or a guardrail override, is also a Warning event (once per reason, not every period)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import Gauge

from optimizer.system import Allocation
from reconciler.inferno.disaggregation import LearntRatio
from reconciler.inferno.guardrail import Guarded
from reconciler.inferno.measure import Measurement
from reconciler.inferno.metrics import InfernoMetrics
from reconciler.inferno.roles import RolesDecision
from reconciler.inferno.saturation import Assessment
from reconciler.inferno.signals import ServerSignals
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.conditions import WantedCondition, merge_conditions, status_differs
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text

logger = logging.getLogger(__name__)

CONDITION_LOAD_MEASURED: Final = "LoadMeasured"
CONDITION_SCALING_ACTIVE: Final = "ScalingActive"
CONDITION_SATURATION_OVERRIDE: Final = "SaturationOverride"
REASON_NOT_OVERRIDDEN: Final = "NotOverridden"
REASON_SIGNALS_UNAVAILABLE: Final = "SignalsUnavailable"
EVENT_SATURATION_OVERRIDE: Final = "SaturationOverride"
EVENT_LOAD_UNAVAILABLE: Final = "LoadUnavailable"
EVENT_NOT_SCALED: Final = "NotScaled"

# The per-Server series one run set: what `InfernoMetrics.publish_servers` keeps for the namespace.
Series = set[tuple[Gauge, tuple[str, ...]]]


def publish(
    metrics: InfernoMetrics,
    namespace: str,
    name: str,
    obj: dict[str, Any],
    *,
    allocation: Allocation | None,
    measurement: Measurement | None,
    series: Series,
) -> None:
    """Set the Server's gauges from this run, each added to `series`."""

    def put(gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
        gauge.labels(*labels).set(value)
        series.add((gauge, labels))

    spec = obj.get("spec") or {}
    ref = spec.get("targetRef") or {}
    target_kind, target_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    accelerator = allocation.accelerator if allocation is not None else ""
    replicas = allocation.num_replicas if allocation is not None else 0
    put(metrics.desired_replicas, (namespace, name, target_kind, target_name, accelerator), replicas)
    put(metrics.unallocated, (namespace, name), 0 if allocation is not None and accelerator else 1)
    load = ((spec.get("currentAlloc") or {}).get("load")) or {}
    if isinstance(load.get("arrivalRate"), int | float):
        put(metrics.arrival_rate, (namespace, name), float(load["arrivalRate"]))
    if isinstance(load.get("avgLength"), int | float):
        put(metrics.avg_length, (namespace, name), float(load["avgLength"]))
    if allocation is not None and accelerator and allocation.itl_average:
        put(metrics.predicted_itl, (namespace, name), allocation.itl_average / 1000.0)
    if measurement is not None:
        put(metrics.load_stale, (namespace, name), 0 if measurement.load_ok else 1)
        if measurement.scale is not None:
            put(
                metrics.current_replicas,
                (namespace, name, target_kind, target_name),
                measurement.scale.observed,
            )


def publish_signals(
    metrics: InfernoMetrics,
    namespace: str,
    name: str,
    *,
    assessment: Assessment | None,
    status: Mapping[str, Any],
    series: Series,
) -> None:
    """The Server's saturation pressure and profile drift gauges, when this run has them."""
    if assessment is not None:
        metrics.saturation_pressure.labels(namespace, name).set(round(assessment.pressure, 3))
        series.add((metrics.saturation_pressure, (namespace, name)))
    drift = (status.get("performance") or {}).get("drift")
    if isinstance(drift, float):
        metrics.profile_drift.labels(namespace, name).set(drift)
        series.add((metrics.profile_drift, (namespace, name)))


@dataclass(frozen=True)
class Reporter:
    recorder: EventRecorder
    metrics: InfernoMetrics
    client: KubeClient
    servers: Informer  # written through with what the status write stored
    server_kind: Kind
    field_manager: str
    now: Callable[[], str]

    async def override_condition(self, obj: dict[str, Any], guarded: Guarded) -> WantedCondition:
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

    async def write(self, obj: dict[str, Any], wanted: Sequence[WantedCondition], extra: dict[str, Any]) -> None:
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
        conditions = merge_conditions(old_status.get("conditions"), wanted, generation=None, now=self.now())
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


def saturation_status(signals: ServerSignals | None, assessment: Assessment) -> dict[str, Any]:
    found = {
        "kvCacheUsage": None if signals is None or signals.kv_cache is None else round(signals.kv_cache, 2),
        "waiting": None if signals is None or signals.waiting is None else round(signals.waiting, 1),
        "running": None if signals is None or signals.running is None else round(signals.running, 1),
        "pressure": round(assessment.pressure, 2),
    }
    return {key: value for key, value in found.items() if value is not None}


def roles_status(decision: RolesDecision, *, learnt: LearntRatio | None) -> dict[str, Any]:
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
