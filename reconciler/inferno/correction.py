"""Between measuring and optimising: learn each (model, accelerator)'s real performance from the Servers'
signals, and with `spec.trend` size for a rising load's forecast; what was used goes into the Servers' status,
rounded so that noise rewrites nothing (docs/design/inferno.md §15, §16). The leader's memory, bounded."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from optimizer.estimation import Estimators, Profile
from optimizer.system import PerfData, System
from reconciler.inferno.signals import ServerSignals
from reconciler.inferno.trend import Trends
from shared.api import inferno as api
from shared.durations import parse_duration


@dataclass(frozen=True)
class Observed:
    """What one targeted Server's pods said this period (the loop's measurement, reduced)."""

    signals: ServerSignals | None
    replicas: int  # pods reporting (the target's status replicas)
    load_ok: bool


class Corrections:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.estimators = Estimators()
        self.trends = Trends()
        self._clock = clock

    def forget(self, namespace: str, name: str) -> None:
        self.trends.forget(namespace, name)

    def adjust(
        self,
        namespace: str,
        system: System,
        *,
        servers: Mapping[str, dict[str, Any]],
        observed: Mapping[str, Observed],
        corrections: Mapping[str, api.ProfileCorrection],
    ) -> dict[str, dict[str, Any]]:
        """Feed this period's observations, then change `system` in place (Apply models' perf, trended loads);
        returns the status pieces per Server metadata.name."""
        status: dict[str, dict[str, Any]] = {}
        learnt: dict[tuple[str, str], PerfData] = {}
        for spec_name, obj in servers.items():
            name = str((obj.get("metadata") or {}).get("name") or "")
            server = system.servers.get(spec_name)
            seen = observed.get(name)
            if server is None or seen is None:
                continue
            mode = corrections.get(server.model, api.DEFAULT_PROFILE_CORRECTION)
            accelerator = server.current.accelerator
            perf = system.perf(server.model, accelerator) if accelerator else None
            if mode != api.PROFILE_CORRECTION_OFF and perf is not None:
                piece = self._observe(server.model, perf, seen, apply=mode == api.PROFILE_CORRECTION_APPLY)
                status.setdefault(name, {})["performance"] = piece
                if mode == api.PROFILE_CORRECTION_APPLY:
                    estimate = self.estimators.get(server.model, accelerator, Profile(perf.alpha, perf.beta)).estimate
                    learnt[(server.model, accelerator)] = replace(perf, alpha=estimate.alpha, beta=estimate.beta)
            trend = (obj.get("spec") or {}).get("trend")
            if isinstance(trend, dict) and isinstance(trend.get("horizon"), str) and seen.load_ok:
                horizon = parse_duration(trend["horizon"]) / 1e9
                measured = server.load.arrival_rate
                forecast = self.trends.get(namespace, name).update(
                    now=self._clock(), measured=measured, horizon=horizon
                )
                if forecast.sized_for != measured:
                    load = replace(server.load, arrival_rate=forecast.sized_for)
                    system.servers[spec_name] = replace(server, current=replace(server.current, load=load))
                status.setdefault(name, {})["trend"] = {
                    "measured": round(measured, 1),
                    "forecast": round(forecast.forecast, 1),
                    **({} if forecast.error is None else {"error": round(forecast.error, 2)}),
                }
        for (model, accelerator), perf in learnt.items():
            system.models[model] = {**system.models[model], accelerator: perf}
        return status

    def _observe(self, model: str, perf: PerfData, seen: Observed, *, apply: bool) -> dict[str, Any]:
        estimator = self.estimators.get(model, perf.accelerator, Profile(perf.alpha, perf.beta))
        signals = seen.signals
        batch: float | None = None
        if signals is not None and signals.running is not None and seen.replicas > 0:
            batch = signals.running / seen.replicas
        itl = signals.itl_ms if signals is not None else None
        piece: dict[str, Any] = {"accelerator": perf.accelerator, "inUse": "estimate" if apply else "profile"}
        if itl is not None and batch is not None and batch > 0:
            estimator.observe(itl=itl, batch=batch)
            predicted = perf.alpha + perf.beta * batch
            piece.update(
                batch=round(batch, 1),
                measuredItl=round(itl, 1),
                predictedItl=round(predicted, 1),
                drift=round((itl - predicted) / predicted, 2) if predicted > 0 else None,
            )
        if signals is not None and signals.ttft_ms is not None:
            piece["measuredTtft"] = round(signals.ttft_ms, 1)
        estimate = estimator.estimate
        piece.update(
            profile={"alpha": perf.alpha, "beta": perf.beta},
            estimate={"alpha": round(estimate.alpha, 2), "beta": round(estimate.beta, 3)},
            observations=estimator.accepted,
            rejected=estimator.rejected,
        )
        return {key: value for key, value in piece.items() if value is not None}
