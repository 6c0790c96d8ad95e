"""The optional trend term (docs/design/inferno.md §16)."""

from __future__ import annotations

import pytest

from reconciler.inferno.trend import Trend, Trends


def test_a_steady_ramp_is_met_ahead_and_the_error_falls() -> None:
    trend = Trend()
    forecast = None
    for step in range(20):
        forecast = trend.update(now=60.0 * step, measured=100.0 + 10.0 * step, horizon=60.0)
    assert forecast is not None
    assert forecast.forecast == pytest.approx(100 + 10 * 20, rel=0.02)  # a minute ahead of the last 290
    assert forecast.sized_for == forecast.forecast > forecast.measured
    assert forecast.error is not None
    assert forecast.error < 0.01


def test_a_falling_trend_never_sizes_below_the_measurement() -> None:
    trend = Trend()
    for step in range(10):
        forecast = trend.update(now=float(step), measured=100.0 - 5 * step, horizon=5.0)
    assert forecast.forecast < forecast.measured == forecast.sized_for


def test_a_flat_load_forecasts_itself_and_the_first_period_has_no_error() -> None:
    trend = Trend()
    first = trend.update(now=0.0, measured=50.0, horizon=30.0)
    assert (first.forecast, first.error) == (50.0, None)
    for step in range(1, 5):
        later = trend.update(now=30.0 * step, measured=50.0, horizon=30.0)
    assert later.forecast == pytest.approx(50.0)
    assert later.error == pytest.approx(0.0)


def test_time_going_backwards_or_standing_still_is_harmless() -> None:
    trend = Trend()
    trend.update(now=10.0, measured=10.0, horizon=1.0)
    again = trend.update(now=10.0, measured=30.0, horizon=1.0)
    back = trend.update(now=5.0, measured=30.0, horizon=1.0)
    assert again.forecast == back.forecast == 10.0


def test_bad_measurements_are_refused_and_trends_are_bounded() -> None:
    with pytest.raises(ValueError, match="finite"):
        Trend().update(now=0.0, measured=float("nan"), horizon=1.0)
    trends = Trends(limit=2)
    a = trends.get("ns", "a")
    trends.get("ns", "b")
    trends.get("ns", "c")
    assert trends.get("ns", "a") is not a
    trends.forget("ns", "a")
