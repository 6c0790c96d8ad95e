"""The online performance profile: a Kalman filter over alpha and beta (docs/design/inferno.md §15)."""

from __future__ import annotations

import math
import random

import pytest

from optimizer.estimation import Estimators, FilterSettings, Profile, ProfileEstimator

PRIOR = Profile(alpha=17.15, beta=0.34)  # docs/design/inferno.md §12
TRUE = Profile(alpha=2 * 17.15, beta=2 * 0.34)  # the profile underestimates the latency by 2x


def feed(estimator: ProfileEstimator, truth: Profile, *, periods: int, noise: float, seed: int) -> int | None:
    """Observations at batches a moving load gives; the first period after which both parameters stay within
    10 % (alpha) and 25 % (beta, the slope, observed through a small lever) of the truth."""
    rng = random.Random(seed)
    converged: int | None = None
    for period in range(1, periods + 1):
        batch = rng.choice([4, 8, 12, 16, 19])
        estimator.observe(itl=truth.itl(batch) * (1 + rng.gauss(0, noise)), batch=batch)
        estimate = estimator.estimate
        close = abs(estimate.alpha / truth.alpha - 1) <= 0.10 and abs(estimate.beta / truth.beta - 1) <= 0.25
        if close and converged is None:
            converged = period
        elif not close:
            converged = None
    return converged


@pytest.mark.parametrize("seed", range(5))
def test_a_profile_off_by_two_is_learnt_within_twenty_periods_and_stays_learnt(seed: int) -> None:
    estimator = ProfileEstimator(prior=PRIOR)
    converged = feed(estimator, TRUE, periods=60, noise=0.05, seed=seed)
    assert converged is not None
    assert converged <= 20, converged
    assert estimator.accepted == 60
    assert estimator.rejected == 0


def test_the_prior_is_the_start_and_a_right_profile_stays_put() -> None:
    estimator = ProfileEstimator(prior=PRIOR)
    assert estimator.estimate == PRIOR
    assert estimator.predict(19) == pytest.approx(17.15 + 0.34 * 19)
    feed(estimator, PRIOR, periods=40, noise=0.05, seed=1)
    assert estimator.estimate.alpha == pytest.approx(PRIOR.alpha, rel=0.05)
    assert estimator.estimate.beta == pytest.approx(PRIOR.beta, rel=0.25)


def test_an_outlier_is_rejected_and_a_lasting_change_is_followed() -> None:
    estimator = ProfileEstimator(prior=PRIOR)
    feed(estimator, PRIOR, periods=40, noise=0.02, seed=2)
    before = estimator.estimate
    spike = estimator.observe(itl=400.0, batch=10)  # one scrape of a stalled pod
    assert (spike.accepted, spike.reason) == (False, "outlier")
    assert spike.innovation_sigmas > 4
    assert estimator.estimate == before
    assert estimator.observe(itl=PRIOR.itl(10), batch=10).accepted  # the next scrape is normal again
    # The same surprise three periods in a row is the world changing: the filter widens and follows.
    reasons = [estimator.observe(itl=3 * PRIOR.itl(batch), batch=batch).reason for batch in (10, 14, 6)]
    assert reasons == ["outlier", "outlier", "reset"]
    feed(estimator, Profile(3 * PRIOR.alpha, 3 * PRIOR.beta), periods=30, noise=0.02, seed=3)
    assert estimator.estimate.alpha == pytest.approx(3 * PRIOR.alpha, rel=0.1)


@pytest.mark.parametrize(("itl", "batch"), [(math.nan, 3.0), (0.0, 3.0), (-1.0, 3.0), (20.0, -1.0), (20.0, math.inf)])
def test_invalid_observations_change_nothing(itl: float, batch: float) -> None:
    estimator = ProfileEstimator(prior=PRIOR)
    update = estimator.observe(itl=itl, batch=batch)
    assert (update.accepted, update.reason) == (False, "invalid")
    assert estimator.estimate == PRIOR
    assert estimator.rejected == 1


def test_the_estimate_stays_within_bounds_whatever_the_data() -> None:
    estimator = ProfileEstimator(prior=PRIOR, settings=FilterSettings(gate_sigmas=1e9))
    for _ in range(50):
        estimator.observe(itl=1e6, batch=1.0)
    assert estimator.estimate.alpha <= 10 * PRIOR.alpha
    assert estimator.estimate.beta <= 10 * PRIOR.beta
    for _ in range(50):
        estimator.observe(itl=1e-6, batch=30.0)
    assert estimator.estimate.alpha >= 0
    assert estimator.estimate.beta >= 0
    assert all(math.isfinite(sd) for sd in estimator.standard_deviations)


def test_a_zero_parameter_can_still_be_learnt() -> None:
    estimator = ProfileEstimator(prior=Profile(alpha=20.0, beta=0.0))
    feed(estimator, Profile(20.0, 0.5), periods=60, noise=0.02, seed=4)
    assert estimator.estimate.beta == pytest.approx(0.5, rel=0.3)


@pytest.mark.parametrize(("alpha", "beta"), [(-1.0, 1.0), (0.0, 0.0), (math.inf, 1.0)])
def test_a_bad_prior_is_refused(alpha: float, beta: float) -> None:
    with pytest.raises(ValueError, match="prior profile"):
        ProfileEstimator(prior=Profile(alpha, beta))


def test_the_filter_is_deterministic() -> None:
    one, two = ProfileEstimator(prior=PRIOR), ProfileEstimator(prior=PRIOR)
    feed(one, TRUE, periods=20, noise=0.05, seed=9)
    feed(two, TRUE, periods=20, noise=0.05, seed=9)
    assert one.estimate == two.estimate


def test_estimators_per_pair_restart_on_a_new_prior_and_are_bounded() -> None:
    estimators = Estimators(limit=2)
    first = estimators.get("m", "G2", PRIOR)
    first.observe(itl=40.0, batch=10)
    assert estimators.get("m", "G2", PRIOR) is first
    edited = estimators.get("m", "G2", Profile(20.0, 0.4))  # the user typed a new profile: a new prior wins
    assert edited is not first
    assert edited.accepted == 0
    estimators.get("m", "A100", PRIOR)
    estimators.get("n", "A100", PRIOR)
    assert len(estimators) == 2
    assert estimators.peek("m", "G2") is None
