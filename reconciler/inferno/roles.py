"""Prefill and decode of a disaggregated ModelServing, actuated as two targets: each role's need, bounds,
guardrail and stabiliser, the ratio band over both, then one JSON patch that tests each role it changes, so
nothing is half-written and no pod template changes (docs/design/inferno.md §19)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.disaggregation import LearntRatio, Ratio, RoleBounds, prefill_need, split
from reconciler.inferno.guardrail import Guarded, control
from reconciler.inferno.saturation import Assessment, Thresholds, assess
from reconciler.inferno.signals import ServerSignals
from reconciler.inferno.stabilizer import Stabilizer
from reconciler.inferno.targets import Bounds, TargetProblem
from shared.api.inferno import DisaggregationSpec, RoleScaling

Side = Literal["prefill", "decode"]
SIDES: Final[tuple[Side, ...]] = ("prefill", "decode")
REASON_ROLE_NOT_FOUND: Final = "RoleNotFound"
MAX_ROLES: Final = 64  # a ModelServing's roles read; Kthena's are a handful


@dataclass(frozen=True)
class LiveRole:
    """A role as the ModelServing holds it now."""

    name: str
    index: int
    replicas: int
    gang_floor: int  # gangPolicy.minRoleReplicas of the role (0 when not set)


def live_roles(serving: Mapping[str, Any], spec: DisaggregationSpec) -> dict[Side, LiveRole]:
    """The two roles `spec` names, read from the ModelServing; TargetProblem naming what is missing."""
    template = (serving.get("spec") or {}).get("template") or {}
    roles = template.get("roles") if isinstance(template, dict) else None
    minimum = ((template.get("gangPolicy") or {}).get("minRoleReplicas") or {}) if isinstance(template, dict) else {}
    items = roles[:MAX_ROLES] if isinstance(roles, list) else []
    names = [str(item.get("name")) for item in items if isinstance(item, dict)]
    found: dict[Side, LiveRole] = {}
    wanted: tuple[tuple[Side, str], ...] = (("prefill", spec.prefill_role), ("decode", spec.decode_role))
    for side, name in wanted:
        index = next((i for i, item in enumerate(items) if isinstance(item, dict) and item.get("name") == name), None)
        if index is None:
            have = ", ".join(names) or "none"
            raise TargetProblem(
                REASON_ROLE_NOT_FOUND,
                f"the target has no role {name!r} (spec.disaggregation.{side}.name; its roles: {have})",
            )
        replicas = items[index].get("replicas", 1)  # Kthena's CRD default
        floor = minimum.get(name, 0) if isinstance(minimum, dict) else 0
        if not _count(replicas) or not _count(floor):
            raise TargetProblem("TargetUnavailable", f"role {name!r} of the target has no replica count")
        found[side] = LiveRole(name=name, index=index, replicas=int(replicas), gang_floor=int(floor))
    return found


def role_bounds(spec: DisaggregationSpec, live: Mapping[Side, LiveRole], ceilings: Ceilings) -> dict[Side, Bounds]:
    """Each role's bounds: its own, raised to its gang floor, within the operator's ceilings."""
    bounds: dict[Side, Bounds] = {}
    sides: tuple[tuple[Side, RoleScaling], ...] = (("prefill", spec.prefill), ("decode", spec.decode))
    for side, role in sides:
        floor = live[side].gang_floor
        source = f"spec.disaggregation.{side}"
        minimum = role.floor
        if floor > minimum:
            minimum, source = floor, f"{source}, gangPolicy.minRoleReplicas {floor}"
        bounds[side] = ceilings.limit(Bounds(min(minimum, role.max_replicas), role.max_replicas, source))
    return bounds


@dataclass(frozen=True)
class RoleDecision:
    side: Side
    role: LiveRole
    need: int  # the role's own need, before guardrail, stabiliser, ratio and bounds
    replicas: int  # what to set
    guarded: Guarded | None  # None: the guard is off
    assessment: Assessment | None
    signals: ServerSignals | None

    @property
    def changed(self) -> bool:
        return self.replicas != self.role.replicas


@dataclass(frozen=True)
class RolesDecision:
    prefill: RoleDecision
    decode: RoleDecision
    bounds: Mapping[Side, Bounds]
    notes: tuple[str, ...]  # what the ratio, the bounds or a blind signal changed

    def __iter__(self) -> Iterator[RoleDecision]:
        return iter((self.prefill, self.decode))

    @property
    def ratio(self) -> float | None:
        return None if self.decode.replicas == 0 else self.prefill.replicas / self.decode.replicas


def decide_roles(
    *,
    spec: DisaggregationSpec,
    decided_decode: int,
    live: Mapping[Side, LiveRole],
    signals: Mapping[Side, ServerSignals | None],
    thresholds: Thresholds | None,
    ceilings: Ceilings,
    stabilizers: Mapping[Side, Stabilizer],
    learnt: LearntRatio | None,
    now: float,
) -> RolesDecision:
    """One period's replicas of both roles (module docstring). `learnt` is updated in place when used."""
    bounds = role_bounds(spec, live, ceilings)
    notes: list[str] = []
    needs: dict[Side, int] = {"decode": decided_decode}
    prefill_signals = signals.get("prefill")
    prompt_rate = prefill_signals.prompt_tokens_per_second if prefill_signals is not None else None
    if spec.prefill_tokens_per_second is not None and prompt_rate is not None:
        needs["prefill"] = prefill_need(
            prompt_tokens_per_second=prompt_rate, tokens_per_second_per_replica=spec.prefill_tokens_per_second
        )
    elif spec.prefill_tokens_per_second is not None:
        needs["prefill"] = live["prefill"].replicas
        notes.append("prefill: prompt-token rate unavailable, its need is its replicas")
    else:
        assert learnt is not None, "a learnt ratio is needed without prefillTokensPerSecond"
        pressure = _pressure(prefill_signals, thresholds, live["prefill"].replicas)
        ratio = learnt.update(pressure)
        needs["prefill"] = math.ceil(decided_decode * ratio - 1e-9)
    guarded: dict[Side, Guarded | None] = {}
    assessments: dict[Side, Assessment | None] = {}
    stabilized: dict[Side, int] = {}
    for side in SIDES:
        role, limit = live[side], bounds[side]
        own = signals.get(side)
        assessment = assess(own.saturation, thresholds, replicas=role.replicas) if own and thresholds else None
        stabilized[side], guard = control(
            decided=needs[side], current=role.replicas, minimum=limit.minimum, maximum=limit.maximum,
            assessment=assessment, stabilizer=stabilizers[side], now=now,
        )  # fmt: skip
        guarded[side] = guard if thresholds is not None else None
        assessments[side] = assessment
    low, high = spec.ratio_bounds
    result = split(
        prefill=stabilized["prefill"], decode=stabilized["decode"], ratio=Ratio(low, high),
        prefill_bounds=RoleBounds(bounds["prefill"].minimum, max(bounds["prefill"].maximum, 1)),
        decode_bounds=RoleBounds(bounds["decode"].minimum, max(bounds["decode"].maximum, 1)),
    )  # fmt: skip
    if result.note:
        notes.append(result.note)
    final: dict[Side, int] = {"prefill": result.prefill, "decode": result.decode}
    for side in SIDES:
        stepped = ceilings.step(current=live[side].replicas, wanted=final[side])
        if stepped != final[side]:
            notes.append(f"{side}: one decision moves it by at most {abs(stepped - live[side].replicas)}")
            final[side] = stepped
    decisions = {
        side: RoleDecision(
            side=side, role=live[side], need=needs[side], replicas=final[side], guarded=guarded[side],
            assessment=assessments[side], signals=signals.get(side),
        )
        for side in SIDES
    }
    return RolesDecision(decisions["prefill"], decisions["decode"], bounds, tuple(notes))


def _pressure(signals: ServerSignals | None, thresholds: Thresholds | None, replicas: int) -> float | None:
    """The prefill pods' pressure against the thresholds (the defaults when the guard is off)."""
    if signals is None:
        return None
    assessment = assess(signals.saturation, thresholds or Thresholds(), replicas=replicas)
    return None if assessment is None else assessment.pressure


def roles_patch(decision: RolesDecision) -> list[dict[str, Any]]:
    """The JSON patch that sets the roles that change, each guarded by a test of its name and its replicas at
    its index (module docstring); empty when nothing changes."""
    patch: list[dict[str, Any]] = []
    for one in decision:
        if not one.changed:
            continue
        at = f"/spec/template/roles/{one.role.index}"
        patch.append({"op": "test", "path": f"{at}/name", "value": one.role.name})
        patch.append({"op": "test", "path": f"{at}/replicas", "value": one.role.replicas})
        patch.append({"op": "replace", "path": f"{at}/replicas", "value": one.replicas})
    return patch


def describe(decision: RolesDecision) -> str:
    """`prefill 1 -> 4 (needs 4), decode 1 (needs 1)`, for the condition and the Event."""
    parts = []
    for one in decision:
        moved = f"{one.role.replicas} -> {one.replicas}" if one.changed else f"{one.replicas}"
        parts.append(f"{one.role.name} {moved} (needs {one.need})")
    return ", ".join(parts)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
