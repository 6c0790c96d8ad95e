"""Go's text for values, as the reference printed them: `%v` of a value decoded from JSON into `interface{}`,
the Go type and JSON kind its `encoding/json` errors name, and `strconv.Quote` (`%q`) of a string; and the
text the reference read as a boolean (`strconv.ParseBool`).

The reference quoted these texts in its messages, and ours repeat them verbatim (docs/design/validation.md §6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Final


def go_type_name(value: object) -> str:
    """The Go type `encoding/json` decodes a JSON value into (as `interface{}`)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    return "[]interface {}"


def json_kind(value: object) -> str:
    """The JSON kind Go names in `cannot unmarshal <kind> into ...`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"


def go_float_text(value: float) -> str:
    """Go's `%v` of a float64: shortest digits, exponent form below 1e-4 and from 1e+06 (`1e+06`, `9000.5`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    decimal = Decimal(repr(abs(value))).normalize()
    _, digit_tuple, exponent = decimal.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(str(d) for d in digit_tuple)
    point = len(digits) + exponent  # position of the decimal point relative to the first digit
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_value_text(value: object) -> str:
    """Go's `%v` of a value decoded from JSON into `interface{}` (every number is a float64)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return go_float_text(float(value))
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        inner = " ".join(f"{key}:{go_value_text(value[key])}" for key in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, Sequence):
        return "[" + " ".join(go_value_text(item) for item in value) + "]"
    return str(value)


# The runes strconv.Quote writes as a two-character escape.
_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """Go's `strconv.Quote` (and `%q`): double-quoted, with `\\a \\b \\f \\n \\r \\t \\v`, backslash and double
    quote escaped; any other rune Go does not print as `\\xNN` (below U+0020, and DEL), `\\uNNNN` or
    `\\UNNNNNNNN`. Printable non-ASCII runes are kept as they are.

    Python's `str.isprintable` is Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and
    the ASCII space.
    """
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'  # the common case: nothing to escape
    return '"' + "".join(_quoted_rune(rune) for rune in text) + '"'


def _quoted_rune(rune: str) -> str:
    escape = _GO_ESCAPES.get(rune)
    if escape is not None:
        return escape
    if rune.isprintable():
        return rune
    code = ord(rune)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate is no valid rune: Go writes U+FFFD in its place
        code = 0xFFFD
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


# strconv.ParseBool's table: nothing else is a boolean to Go ("yes" and "on" are errors).
_GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def go_parse_bool(text: str) -> bool | None:
    """Go's `strconv.ParseBool`; None where it returns an error."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None
