"""reconciler/inferno/roles.py: both roles of a disaggregated target decided in one period, and the JSON patch
that sets them."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.disaggregation import LearntRatio, Ratio
from reconciler.inferno.roles import LiveRole, Side, decide_roles, live_roles, roles_patch
from reconciler.inferno.saturation import Thresholds
from reconciler.inferno.signals import ServerSignals
from reconciler.inferno.stabilizer import Stabilizer
from reconciler.inferno.targets import TargetProblem
from shared.api.inferno import DisaggregationSpec

OPEN = Ceilings(max_replicas=100, min_replicas=0, max_step=100, max_step_percent=100, min_stabilization=0)


def spec(**extra: Any) -> DisaggregationSpec:
    fields = {"prefill": {"maxReplicas": 8}, "decode": {"maxReplicas": 8}, "minRatio": 0.25, "maxRatio": 4, **extra}
    return DisaggregationSpec.model_validate(fields)


def serving(prefill: int = 1, decode: int = 1, *, floors: dict[str, int] | None = None) -> dict[str, Any]:
    roles = [{"name": "decode", "replicas": decode}, {"name": "prefill", "replicas": prefill}]  # not Kthena's order
    template: dict[str, Any] = {"roles": roles}
    if floors is not None:
        template["gangPolicy"] = {"minRoleReplicas": floors}
    return {"spec": {"template": template}}


def fresh() -> Stabilizer:
    """A stabiliser without a window that has seen an earlier period (the first one keeps the current count)."""
    stabilizer = Stabilizer(window=0)
    stabilizer.recommend(now=-60.0, desired=0, current=0)
    return stabilizer


def quiet(prompt: float | None = None) -> ServerSignals:
    return ServerSignals(kv_cache=0.1, waiting=0.0, running=1.0, prompt_tokens_per_second=prompt)


def decide(
    live: dict[Side, LiveRole], *, pd: DisaggregationSpec, decode: int, prompt: float | None,
    ceilings: Ceilings = OPEN, learnt: LearntRatio | None = None, prefill_signals: ServerSignals | None = None,
) -> tuple[int, int, tuple[str, ...]]:  # fmt: skip
    decision = decide_roles(
        spec=pd, decided_decode=decode, live=live, signals={"prefill": prefill_signals or quiet(prompt),
        "decode": quiet()}, thresholds=Thresholds(), ceilings=ceilings,
        stabilizers={"prefill": fresh(), "decode": fresh()}, learnt=learnt, now=0.0,
    )  # fmt: skip
    return decision.prefill.replicas, decision.decode.replicas, decision.notes


def test_roles_are_read_by_name_with_their_gang_floor() -> None:
    live = live_roles(serving(3, 2, floors={"prefill": 2, "decode": 1}), spec())
    assert live["prefill"] == LiveRole(name="prefill", index=1, replicas=3, gang_floor=2)
    assert live["decode"] == LiveRole(name="decode", index=0, replicas=2, gang_floor=1)
    with pytest.raises(TargetProblem, match=r"no role 'prefill-x' \(spec.disaggregation.prefill.name; its roles: "
                                            r"decode, prefill\)"):  # fmt: skip
        live_roles(serving(), spec(prefill={"name": "prefill-x", "maxReplicas": 8}))


def test_each_side_follows_its_own_need_within_the_band() -> None:
    pd = spec(prefillTokensPerSecond=10_000)
    live = live_roles(serving(1, 1), pd)
    assert decide(live, pd=pd, decode=1, prompt=40_000)[:2] == (4, 1)  # prefill-heavy
    # Decode-heavy: prefill needs 1 but 7 decode replicas need at least 7 x 0.25 = 1.75 prefill ones.
    prefill, decode, notes = decide(live, pd=pd, decode=7, prompt=400)
    assert (prefill, decode) == (2, 7)
    assert "prefill raised to 2 to keep prefill/decode >= 0.25" in notes


def test_the_gang_floor_is_the_lowest_a_role_goes_and_ceilings_bound_the_step() -> None:
    pd = spec(prefillTokensPerSecond=10_000)
    live = live_roles(serving(3, 2, floors={"prefill": 3, "decode": 1}), pd)
    assert decide(live, pd=pd, decode=1, prompt=0)[:2] == (3, 1)  # prefill would go to 1: Kthena refuses < 3
    stepped = Ceilings(max_replicas=100, min_replicas=0, max_step=1, max_step_percent=0, min_stabilization=0)
    prefill, decode, notes = decide(live, pd=pd, decode=8, prompt=80_000, ceilings=stepped)
    assert (prefill, decode) == (4, 3)
    assert "decode: one decision moves it by at most 1" in notes


def test_a_blind_prefill_rate_keeps_prefill_where_it_is() -> None:
    pd = spec(prefillTokensPerSecond=10_000)
    live = live_roles(serving(3, 2), pd)
    prefill, _, notes = decide(live, pd=pd, decode=2, prompt=None)
    assert prefill == 3
    assert "prefill: prompt-token rate unavailable, its need is its replicas" in notes


def test_without_a_prefill_rate_the_ratio_is_learnt_from_prefill_pressure() -> None:
    pd = spec()
    learnt = LearntRatio(band=Ratio(0.25, 4.0))
    live = live_roles(serving(1, 4), pd)
    hot = ServerSignals(kv_cache=0.99, waiting=40.0, running=4.0)  # prefill pods saturated
    first = learnt.value
    prefill, decode, _ = decide(live, pd=pd, decode=4, prompt=None, learnt=learnt, prefill_signals=hot)
    assert learnt.value > first
    assert decode == 4
    assert prefill >= 4  # the ratio rose, and the guardrail adds to the saturated prefill side


def test_the_patch_tests_each_role_by_name_and_replicas_before_replacing_them() -> None:
    pd = spec(prefillTokensPerSecond=10_000)
    live = live_roles(serving(1, 1), pd)
    decision = decide_roles(
        spec=pd, decided_decode=1, live=live, signals={"prefill": quiet(40_000), "decode": quiet()},
        thresholds=None, ceilings=OPEN, stabilizers={"prefill": fresh(), "decode": fresh()},
        learnt=None, now=0.0,
    )  # fmt: skip
    assert roles_patch(decision) == [
        {"op": "test", "path": "/spec/template/roles/1/name", "value": "prefill"},
        {"op": "test", "path": "/spec/template/roles/1/replicas", "value": 1},
        {"op": "replace", "path": "/spec/template/roles/1/replicas", "value": 4},
    ]
