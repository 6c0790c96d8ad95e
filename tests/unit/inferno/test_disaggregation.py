"""Prefill and decode sized apart, with a ratio between them (docs/design/inferno.md §17)."""

from __future__ import annotations

import pytest

from reconciler.inferno.disaggregation import LearntRatio, Ratio, RoleBounds, prefill_need, split

BOUNDS = RoleBounds(1, 8)


def test_each_side_gets_its_need_inside_the_band() -> None:
    result = split(prefill=3, decode=4, prefill_bounds=BOUNDS, decode_bounds=BOUNDS, ratio=Ratio(0.5, 2.0))
    assert (result.prefill, result.decode, result.note) == (3, 4, None)


def test_a_prefill_heavy_need_pulls_decode_up_to_keep_the_ratio() -> None:
    result = split(prefill=6, decode=1, prefill_bounds=BOUNDS, decode_bounds=BOUNDS, ratio=Ratio(0.5, 2.0))
    assert (result.prefill, result.decode) == (6, 3)
    assert result.note is not None
    assert "decode raised to 3" in result.note


def test_a_decode_heavy_need_pulls_prefill_up() -> None:
    result = split(prefill=1, decode=7, prefill_bounds=BOUNDS, decode_bounds=BOUNDS, ratio=Ratio(0.5, 2.0))
    assert (result.prefill, result.decode) == (4, 7)
    assert result.note is not None
    assert "prefill raised to 4" in result.note


def test_bounds_that_leave_no_room_cut_a_side_and_say_so() -> None:
    result = split(prefill=8, decode=1, prefill_bounds=BOUNDS, decode_bounds=RoleBounds(1, 2), ratio=Ratio(0.5, 2.0))
    assert (result.prefill, result.decode) == (4, 2)
    assert result.note is not None
    assert "prefill cut to 4" in result.note
    other = split(prefill=1, decode=8, prefill_bounds=RoleBounds(1, 2), decode_bounds=BOUNDS, ratio=Ratio(0.5, 2.0))
    assert (other.prefill, other.decode) == (2, 4)
    assert other.note is not None
    assert "decode cut to 4" in other.note


@pytest.mark.parametrize("prefill", range(0, 10))
@pytest.mark.parametrize("decode", range(0, 10))
def test_the_ratio_and_bounds_always_hold(prefill: int, decode: int) -> None:
    ratio = Ratio(0.5, 1.5)
    result = split(prefill=prefill, decode=decode, prefill_bounds=BOUNDS, decode_bounds=BOUNDS, ratio=ratio)
    assert 1 <= result.prefill <= 8
    assert 1 <= result.decode <= 8
    assert ratio.minimum - 1e-9 <= result.prefill / result.decode <= ratio.maximum + 1e-9
    # Nothing is cut below its need while the bounds allow it.
    assert result.prefill >= min(prefill, 8) or result.decode == 8
    assert result.decode >= min(decode, 8) or result.prefill == 8


def test_prefill_need_from_prompt_tokens() -> None:
    assert prefill_need(prompt_tokens_per_second=25_000, tokens_per_second_per_replica=10_000) == 3
    assert prefill_need(prompt_tokens_per_second=20_000, tokens_per_second_per_replica=10_000) == 2
    assert prefill_need(prompt_tokens_per_second=0, tokens_per_second_per_replica=10_000) == 0
    with pytest.raises(ValueError, match="per replica must be > 0"):
        prefill_need(prompt_tokens_per_second=1, tokens_per_second_per_replica=0)


def test_the_learnt_ratio_settles_where_prefill_runs_at_its_target_pressure() -> None:
    learnt = LearntRatio(band=Ratio(0.1, 10.0))
    assert learnt.value == pytest.approx(1.0)
    # Prefill pods' pressure is inversely proportional to the prefill replicas per decode replica: at ratio r
    # the pressure is 0.9 / r, so the target 0.6 is met at r = 1.5.
    for _ in range(30):
        learnt.update(0.9 / learnt.value)
    assert learnt.value == pytest.approx(1.5, rel=0.01)
    learnt.update(None)  # no signal: nothing learnt
    assert learnt.value == pytest.approx(1.5, rel=0.01)
    for _ in range(50):
        learnt.update(100.0)
    assert learnt.value == 10.0  # never beyond the band


@pytest.mark.parametrize(("low", "high"), [(-1.0, 1.0), (2.0, 1.0), (0.0, 0.0), (0.0, float("inf"))])
def test_bad_ratios_and_bounds_are_refused(low: float, high: float) -> None:
    with pytest.raises(ValueError, match="ratio bounds"):
        Ratio(low, high)
    with pytest.raises(ValueError, match="not a range"):
        RoleBounds(3, 2)
