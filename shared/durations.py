"""Go duration strings (metav1.Duration), parsed and printed the way Go's time package does.

Kthena's messages quote durations as Go prints them (`"31m0s"`), and the CRDs store them as text.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator, Field

from shared.gotext import go_quote

_UNIT_NANOS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")
_NUMBER_CHARS = frozenset("0123456789.")
_MAX_NANOS = (1 << 63) - 1
# The syntax Go's time.ParseDuration accepts, for the CRD schema (range overflow is left to the parser).
DURATION_PATTERN = r"^[-+]?((([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+|0)$"


class DurationError(ValueError):
    pass


@lru_cache(maxsize=1024)  # pure; the same few grace periods are parsed on every admission request
def parse_duration(text: str) -> int:
    """Return the duration in nanoseconds; raise DurationError with Go's wording on bad input.

    Mirrors Go's time.ParseDuration: an optional sign, then one or more `<number><unit>` terms.
    """
    original = text
    quoted = go_quote(original)
    negative = False
    if text[:1] in ("+", "-"):
        negative = text[0] == "-"
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise DurationError(f"time: invalid duration {quoted}")
    total = Decimal(0)
    position = 0
    while position < len(text):
        number = _NUMBER.match(text, position)
        if number is None:
            raise DurationError(f"time: invalid duration {quoted}")
        position = number.end()
        unit_end = position
        while unit_end < len(text) and text[unit_end] not in _NUMBER_CHARS:
            unit_end += 1
        unit = text[position:unit_end]
        if not unit:
            raise DurationError(f"time: missing unit in duration {quoted}")
        if unit not in _UNIT_NANOS:
            raise DurationError(f"time: unknown unit {go_quote(unit)} in duration {quoted}")
        total += Decimal(number.group(0)) * _UNIT_NANOS[unit]
        position = unit_end
    nanos = int(total)
    if nanos > _MAX_NANOS + (1 if negative else 0):
        raise DurationError(f"time: invalid duration {quoted}")
    return -nanos if negative else nanos


def format_duration(nanos: int) -> str:
    """Go's Duration.String(): `1h2m3s`, `1.5s`, `300ns`, `0s`."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    value = abs(nanos)
    if value < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if value >= size:
                return sign + _fraction(value, size) + unit
    hours, rest = divmod(value, 3600 * 1_000_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000_000)
    seconds = _fraction(rest, 1_000_000_000)
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"


def check_duration(text: str) -> str:
    """Accept a Go duration string unchanged; raise ValueError with Go's wording otherwise."""
    parse_duration(text)
    return text


GoDuration = Annotated[str, AfterValidator(check_duration), Field(json_schema_extra={"pattern": DURATION_PATTERN})]
"""A metav1.Duration on the wire, such as `30s` or `1m30s`."""
