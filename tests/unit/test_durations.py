"""Go durations: parsing with Go's messages and printing like Duration.String()."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.durations import DURATION_PATTERN, DurationError, format_duration, parse_duration

SECOND = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("-0", 0),
        ("30s", 30 * SECOND),
        ("1m30s", 90 * SECOND),
        ("1.5h", 5400 * SECOND),
        ("300ns", 300),
        ("1us", 1000),
        ("1µs", 1000),
        ("2ms", 2_000_000),
        (".5s", SECOND // 2),
        ("5.s", 5 * SECOND),
        ("-1m", -60 * SECOND),
        ("+2h3m", (2 * 3600 + 180) * SECOND),
        ("9223372036854775807ns", (1 << 63) - 1),
        ("-9223372036854775808ns", -(1 << 63)),
    ],
)
def test_parse(text: str, nanos: int) -> None:
    assert parse_duration(text) == nanos
    assert re.match(DURATION_PATTERN, text) is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("abc", 'time: invalid duration "abc"'),
        ("30", 'time: missing unit in duration "30"'),
        ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        (".s", 'time: invalid duration ".s"'),
        ("-", 'time: invalid duration "-"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ],
)
def test_parse_errors_use_gos_wording(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (31 * 60 * SECOND, "31m0s"),
        (90 * SECOND, "1m30s"),
        (3600 * SECOND, "1h0m0s"),
        (300, "300ns"),
        (1500, "1.5µs"),
        (2_500_000, "2.5ms"),
        (SECOND + SECOND // 2, "1.5s"),
        (-90 * SECOND, "-1m30s"),
    ],
)
def test_format_like_go(nanos: int, text: str) -> None:
    assert format_duration(nanos) == text


@given(st.integers(min_value=-(1 << 63) + 1, max_value=(1 << 63) - 1))
def test_printed_durations_parse_back_to_the_same_value(nanos: int) -> None:
    text = format_duration(nanos)
    assert parse_duration(text) == nanos
    assert re.match(DURATION_PATTERN, text) is not None
