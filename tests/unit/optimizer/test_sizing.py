"""Legacy decode-only sizing (docs/design/inferno.md §4, §12)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optimizer.sizing import (
    SLO_MARGIN,
    SizingRequest,
    estimate_ggm,
    legacy_service_rates,
    rescale,
    size_candidate,
    size_candidates,
)
from optimizer.system import Accelerator, Allocation, Load, ModelTarget, PerfData, Server

G2 = Accelerator(name="G2", type="G2", cost=23.0)
GRANITE_ON_G2 = PerfData(
    model="granite-13b", accelerator="G2", acc_count=1, alpha=17.15, beta=0.34, max_batch_size=38, at_tokens=512
)


def make_server(rate: float, length: int, *, min_replicas: int = 0, max_batch: int = 0, name: str = "s") -> Server:
    return Server(
        name=name,
        class_name="Premium",
        model="granite-13b",
        current=Allocation(load=Load(arrival_rate=rate, avg_length=length)),
        min_num_replicas=min_replicas,
        max_batch_size=max_batch,
    )


def test_slo_margin_is_minus_ln_of_five_percent() -> None:
    assert pytest.approx(2.9957323, rel=1e-7) == SLO_MARGIN


def test_legacy_service_rates() -> None:
    # mu_n = n / ((alpha + beta n) L): mu_1 = 1 / (17.49 * 1024), mu_19 = 19 / (23.61 * 1024).
    rates = legacy_service_rates(alpha=17.15, beta=0.34, avg_length=1024, max_batch=19)
    assert len(rates) == 19
    assert rates[0] == pytest.approx(1 / 17909.76, rel=1e-12)
    assert rates[18] == pytest.approx(19 / 24176.64, rel=1e-12)


def test_worked_example_legacy() -> None:
    # docs/design/inferno.md §12, legacy: 60 rpm of 1024-token requests, ITL 40 ms, TTW 500 ms on G2 (cost 23):
    # N = floor(38 * 512 / 1024) = 19; 2 x G2, maxBatch 19, cost 46, itl 21.16437, wait 102.09766.
    candidate = size_candidate(
        server=make_server(60, 1024),
        accelerator=G2,
        perf=GRANITE_ON_G2,
        target=ModelTarget(model="granite-13b", slo_itl=40, slo_ttw=500),
    )
    assert candidate is not None
    assert candidate.accelerator == "G2"
    assert candidate.num_replicas == 2
    assert candidate.max_batch == 19
    assert candidate.cost == 46
    assert candidate.itl_average == pytest.approx(21.16437, rel=6e-6)
    assert candidate.wait_average == pytest.approx(102.09766, abs=0.01)
    assert candidate.demand == pytest.approx(60 / 60000)
    # Two replicas are needed: the rate per replica lies between 1/2 and 1 of the demand.
    assert candidate.demand / 2 <= candidate.max_rate_per_replica < candidate.demand
    # ... and it is bounded by lambda_max = 0.999 mu_19.
    assert candidate.max_rate_per_replica <= 0.999 * 19 / 24176.64


def test_the_binding_target_is_met_at_the_rate_per_replica() -> None:
    server = make_server(60, 1024)
    target = ModelTarget(model="granite-13b", slo_itl=40, slo_ttw=500)
    candidate = size_candidate(server=server, accelerator=G2, perf=GRANITE_ON_G2, target=target)
    assert candidate is not None
    assert candidate.profile is not None
    at_limit = candidate.profile.queue().solve(candidate.max_rate_per_replica)
    assert at_limit.avg_wait_time == pytest.approx(500 / SLO_MARGIN, rel=1e-8)  # the wait binds
    assert at_limit.avg_service_time / 1024 < 40  # the ITL does not


def test_zero_load_keeps_the_minimum_on_the_accelerator() -> None:
    target = ModelTarget(model="granite-13b", slo_itl=40)
    none = size_candidate(server=make_server(0, 1024), accelerator=G2, perf=GRANITE_ON_G2, target=target)
    assert none is not None
    assert (none.accelerator, none.num_replicas, none.cost, none.wait_average) == ("G2", 0, 0, 0)
    assert none.itl_average == pytest.approx(17.15 + 0.34)
    assert none.max_batch == 38
    kept = size_candidate(
        server=make_server(0, 1024, min_replicas=3), accelerator=G2, perf=GRANITE_ON_G2, target=target
    )
    assert kept is not None
    assert (kept.num_replicas, kept.cost) == (3, 69)
    no_tokens = size_candidate(server=make_server(60, 0), accelerator=G2, perf=GRANITE_ON_G2, target=target)
    assert no_tokens is not None
    assert no_tokens.num_replicas == 0


def test_an_itl_target_below_the_lightest_load_is_infeasible() -> None:
    # At the lightest load a token takes alpha + beta = 17.49 ms; 17 ms cannot be met.
    target = ModelTarget(model="granite-13b", slo_itl=17)
    assert size_candidate(server=make_server(60, 1024), accelerator=G2, perf=GRANITE_ON_G2, target=target) is None


FLAT = PerfData(model="m", accelerator="G2", acc_count=1, alpha=10.0, beta=0.0, max_batch_size=10, at_tokens=100)


def test_with_beta_zero_the_itl_is_alpha_at_any_load() -> None:
    # beta = 0: every request gets a token every alpha ms whatever the batch, so ITL = 10 ms exactly.
    server = make_server(600, 100)
    too_tight = size_candidate(server=server, accelerator=G2, perf=FLAT, target=ModelTarget("m", slo_itl=9.99))
    assert too_tight is None
    loose = size_candidate(server=server, accelerator=G2, perf=FLAT, target=ModelTarget("m", slo_itl=10.01))
    assert loose is not None
    assert loose.itl_average == pytest.approx(10.0, rel=1e-12)
    # N = 10 * 100 / 100 = 10, mu_10 = 10 / (10 * 100) = 0.01 req/ms, lambda_max = 0.00999 req/ms.
    assert loose.max_rate_per_replica == pytest.approx(0.00999, rel=1e-12)


def test_no_target_sizes_for_lambda_max() -> None:
    # 3000 rpm = 0.05 req/ms over lambda_max = 0.00999: ceil(5.005) = 6 replicas.
    candidate = size_candidate(server=make_server(3000, 100), accelerator=G2, perf=FLAT, target=ModelTarget("m"))
    assert candidate is not None
    assert candidate.num_replicas == 6
    assert candidate.cost == 6 * 23


def test_a_tps_target_replaces_the_arrival_rate() -> None:
    # Demand = TPS / (1000 L); rate per replica = 0.9 lambda_max = 0.008991 req/ms.
    # TPS 100 -> 0.001 req/ms -> 1 replica; TPS 2000 -> 0.02 req/ms -> ceil(2.2244) = 3 replicas.
    server = make_server(6000, 100)  # 0.1 req/ms that would need 11 replicas, ignored
    small = size_candidate(server=server, accelerator=G2, perf=FLAT, target=ModelTarget("m", slo_tps=100))
    large = size_candidate(server=server, accelerator=G2, perf=FLAT, target=ModelTarget("m", slo_tps=2000))
    assert small is not None
    assert large is not None
    assert small.num_replicas == 1
    assert large.num_replicas == 3
    assert large.max_rate_per_replica == pytest.approx(0.9 * 0.00999, rel=1e-12)
    assert large.demand == pytest.approx(0.02)


def test_min_replicas_raise_the_count() -> None:
    # The worked example needs 2 replicas; a minimum of 5 wins, and the load is spread over 5.
    target = ModelTarget(model="granite-13b", slo_itl=40, slo_ttw=500)
    server = make_server(60, 1024, min_replicas=5)
    candidate = size_candidate(server=server, accelerator=G2, perf=GRANITE_ON_G2, target=target)
    two = size_candidate(server=make_server(60, 1024), accelerator=G2, perf=GRANITE_ON_G2, target=target)
    assert candidate is not None
    assert two is not None
    assert candidate.num_replicas == 5
    assert candidate.cost == 5 * 23
    assert candidate.wait_average < two.wait_average


def test_batch_override_replaces_the_kv_budget() -> None:
    # N = 4: lambda_max = 0.999 * 4 / ((17.15 + 0.34 * 4) * 1024) = 2.1082e-4 req/ms, so 0.001 req/ms needs
    # at least ceil(4.743) = 5 replicas.
    target = ModelTarget(model="granite-13b", slo_itl=40, slo_ttw=500)
    server = make_server(60, 1024, max_batch=4)
    candidate = size_candidate(server=server, accelerator=G2, perf=GRANITE_ON_G2, target=target)
    assert candidate is not None
    assert candidate.max_batch == 4
    assert candidate.max_rate_per_replica <= 0.999 * 4 / (18.51 * 1024)
    assert candidate.num_replicas >= 5


def test_sizing_together_gives_each_pair_its_own_sizing() -> None:
    # Several batch sizes, an idle server, an infeasible target, a TPS target and no target at all, sized in
    # one call: every candidate is exactly the one sized alone.
    worked = ModelTarget(model="granite-13b", slo_itl=40, slo_ttw=500)
    requests = [
        SizingRequest(server=make_server(60, 1024), accelerator=G2, perf=GRANITE_ON_G2, target=worked),
        SizingRequest(server=make_server(600, 100), accelerator=G2, perf=FLAT, target=ModelTarget("m", slo_itl=10.01)),
        SizingRequest(server=make_server(0, 1024), accelerator=G2, perf=GRANITE_ON_G2, target=worked),
        SizingRequest(server=make_server(60, 1024), accelerator=G2, perf=GRANITE_ON_G2, target=ModelTarget("g", 17)),
        SizingRequest(server=make_server(6000, 100), accelerator=G2, perf=FLAT, target=ModelTarget("m", slo_tps=2000)),
        SizingRequest(server=make_server(3000, 100), accelerator=G2, perf=FLAT, target=ModelTarget("m")),
        SizingRequest(server=make_server(60, 1024, max_batch=4), accelerator=G2, perf=GRANITE_ON_G2, target=worked),
        SizingRequest(server=make_server(120, 512), accelerator=G2, perf=GRANITE_ON_G2, target=worked),
    ]
    together = size_candidates(requests)
    alone = [
        size_candidate(server=r.server, accelerator=r.accelerator, perf=r.perf, target=r.target) for r in requests
    ]
    assert together == alone
    assert [candidate is None for candidate in together] == [False, False, False, True, False, False, False, False]


def test_units_and_cost_follow_acc_count_and_multiplicity() -> None:
    quad = Accelerator(name="4xA100", type="A100", cost=160.0, multiplicity=4)
    perf = PerfData(model="m", accelerator="4xA100", acc_count=2, alpha=10, beta=0, max_batch_size=10, at_tokens=100)
    candidate = size_candidate(server=make_server(3000, 100), accelerator=quad, perf=perf, target=ModelTarget("m"))
    assert candidate is not None
    assert candidate.units_per_replica == 8  # accCount 2 x multiplicity 4
    assert candidate.cost_per_replica == 320  # cost x accCount
    assert candidate.cost == 320 * candidate.num_replicas
    assert candidate.units == 8 * candidate.num_replicas


def test_rescale_scales_cost_and_recomputes_latency() -> None:
    target = ModelTarget(model="m")
    full = size_candidate(server=make_server(3000, 100), accelerator=G2, perf=FLAT, target=target)
    assert full is not None
    assert full.num_replicas == 6
    half = rescale(full, 3)
    assert half.num_replicas == 3
    assert half.cost == pytest.approx(full.cost / 2)
    assert half.value == pytest.approx(full.value / 2)
    assert half.wait_average > full.wait_average  # twice the load per replica
    assert half.saturated
    assert not full.saturated
    assert rescale(full, 6) is full
    with pytest.raises(ValueError, match="cannot rescale"):
        rescale(full, 0)


def test_ggm_estimate_by_hand() -> None:
    # The G/G/m estimate (docs/design/inferno.md §4) with alpha 10, beta 0.5, 16 @ 512 tokens, L = 512 -> N = 16,
    # s = 10 + 0.5 * 16 = 18 ms; COVs 1 and 1 -> g = 1; ITL 20, TTW 300, 60 rpm.
    perf = PerfData(model="m", accelerator="G2", acc_count=1, alpha=10, beta=0.5, max_batch_size=16, at_tokens=512)
    server = Server(
        name="s",
        class_name="c",
        model="m",
        current=Allocation(load=Load(arrival_rate=60, avg_length=512, arrival_cov=1, service_cov=1)),
    )
    estimate = estimate_ggm(server=server, perf=perf, target=ModelTarget("m", slo_itl=20, slo_ttw=300))
    assert estimate is not None
    x = 16 * (300 / 2.995732273553991) / (512 * 18 * 1)
    rate = (x / (1 + x)) / (512 * 18)
    replicas = math.ceil(60 / (rate * 60000))
    assert replicas == 63  # ceil(62.22...)
    rho = 60 * 512 * 18 / (63 * 60000)
    assert estimate.num_replicas == 63
    assert estimate.rho == pytest.approx(rho, rel=1e-12)
    assert estimate.wait_average == pytest.approx(512 * 18 * (rho / (1 - rho)) / 16, rel=1e-12)
    assert estimate.itl_average == 18
    assert estimate_ggm(server=server, perf=perf, target=ModelTarget("m", slo_itl=17, slo_ttw=300)) is None
    assert estimate_ggm(server=server, perf=perf, target=ModelTarget("m")) is None  # no target: 0 replicas


# --- monotonicity ----------------------------------------------------------------------------------------

perf_strategy = st.builds(
    PerfData,
    model=st.just("m"),
    accelerator=st.just("G2"),
    acc_count=st.integers(1, 4),
    alpha=st.floats(2.0, 40.0),
    beta=st.floats(0.0, 2.0),
    max_batch_size=st.integers(1, 128),
    at_tokens=st.sampled_from([128, 512, 2048]),
)


@settings(max_examples=40, deadline=None)
@given(
    perf=perf_strategy,
    length=st.integers(16, 4096),
    rates=st.tuples(st.floats(0.1, 5000.0), st.floats(0.1, 5000.0)),
    itl=st.floats(0.0, 200.0),
    ttw=st.floats(0.0, 5000.0),
)
def test_more_load_never_means_fewer_replicas(
    perf: PerfData, length: int, rates: tuple[float, float], itl: float, ttw: float
) -> None:
    low, high = sorted(rates)
    target = ModelTarget(model="m", slo_itl=itl, slo_ttw=ttw)
    at_low = size_candidate(server=make_server(low, length), accelerator=G2, perf=perf, target=target)
    at_high = size_candidate(server=make_server(high, length), accelerator=G2, perf=perf, target=target)
    assert (at_low is None) == (at_high is None)  # feasibility depends on the targets, not the load
    if at_low is not None and at_high is not None:
        assert at_high.num_replicas >= at_low.num_replicas
        assert at_high.cost >= at_low.cost


@settings(max_examples=40, deadline=None)
@given(
    perf=perf_strategy,
    length=st.integers(16, 4096),
    rate=st.floats(0.1, 5000.0),
    itls=st.tuples(st.floats(1.0, 200.0), st.floats(1.0, 200.0)),
    ttws=st.tuples(st.floats(1.0, 5000.0), st.floats(1.0, 5000.0)),
)
def test_a_looser_slo_never_costs_more(
    perf: PerfData, length: int, rate: float, itls: tuple[float, float], ttws: tuple[float, float]
) -> None:
    tight = ModelTarget(model="m", slo_itl=min(itls), slo_ttw=min(ttws))
    loose = ModelTarget(model="m", slo_itl=max(itls), slo_ttw=max(ttws))
    server = make_server(rate, length)
    at_tight = size_candidate(server=server, accelerator=G2, perf=perf, target=tight)
    at_loose = size_candidate(server=server, accelerator=G2, perf=perf, target=loose)
    assume(at_tight is not None)
    assert at_tight is not None
    assert at_loose is not None  # what meets a tight SLO meets a looser one
    assert at_loose.cost <= at_tight.cost
    assert at_loose.max_rate_per_replica >= at_tight.max_rate_per_replica * (1 - 1e-9)
