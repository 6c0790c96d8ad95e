"""Go duration strings (metav1.Duration), parsed and printed the way Go's time package does.

Kthena's messages quote durations as Go prints them (`"31m0s"`), and the CRDs store them as text.
"""

from __future__ import annotations

import re
from decimal import Decimal

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
_TERM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_MAX_NANOS = (1 << 63) - 1


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> int:
    """Return the duration in nanoseconds; raise DurationError with Go's wording on bad input."""
    original = text
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise DurationError(f'time: invalid duration "{original}"')
    total = Decimal(0)
    position = 0
    while position < len(text):
        match = _TERM.match(text, position)
        if match is None:
            if re.match(r"(\d+(?:\.\d*)?|\.\d+)", text[position:]):
                raise DurationError(f'time: missing unit in duration "{original}"')
            raise DurationError(f'time: invalid duration "{original}"')
        total += Decimal(match.group(1)) * _UNIT_NANOS[match.group(2)]
        position = match.end()
    nanos = int(total)
    if nanos > _MAX_NANOS:
        raise DurationError(f'time: invalid duration "{original}"')
    return sign * nanos


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
