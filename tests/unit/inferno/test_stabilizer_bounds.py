"""Scale-down stabilisation keeps what can still matter, and nothing more (reconciler/inferno/stabilizer.py):
the same answers as keeping every decision of the window, in memory bounded by the replica counts seen, whatever
the window and however long it runs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.inferno.stabilizer import Stabilizer


def keep_everything(window: float, steps: list[tuple[float, int, int]]) -> list[int]:
    """The rule with every decision kept: what the stabiliser must answer."""
    history: list[tuple[float, int]] = []
    answers = []
    for now, desired, current in steps:
        if not history:
            history.append((now, current))
        history.append((now, desired))
        recent = [value for at, value in history if at >= now - window] or [desired]
        answers.append(desired if desired >= current else min(current, max(recent)))
    return answers


STEPS = st.lists(
    st.tuples(st.floats(min_value=0, max_value=5, allow_nan=False), st.integers(0, 12), st.integers(0, 12)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300)
@given(st.floats(min_value=0, max_value=30, allow_nan=False), STEPS)
def test_the_answers_are_those_of_keeping_every_decision(window: float, gaps: list[tuple[float, int, int]]) -> None:
    now = 0.0
    steps = []
    for gap, desired, current in gaps:
        now += gap
        steps.append((now, desired, current))
    stabilizer = Stabilizer(window=window)
    assert [stabilizer.recommend(now=t, desired=d, current=c) for t, d, c in steps] == keep_everything(window, steps)


def test_eight_hours_at_the_shortest_period_with_the_longest_window_stay_small() -> None:
    """288,000 decisions 100 ms apart in a window of ~292 years, each a little lower than the last (the history
    that keeps most) and rising back every 1,000: the history never holds more than the counts below 1,000."""
    stabilizer = Stabilizer(window=9.2e9)
    longest = 0
    for step in range(288_000):
        stabilizer.recommend(now=step * 0.1, desired=999 - step % 1000, current=500)
        longest = max(longest, len(stabilizer))
    assert longest <= 1001
