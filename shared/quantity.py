"""Kubernetes resource quantities (int-or-string), checked with the API server's own pattern."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetPydanticSchema, StrictInt, StrictStr, WithJsonSchema
from pydantic_core import core_schema

from shared.json_values import integral_float

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)
# Refused with this fixed text, as native decoding refuses; a field error says `pattern_message(value)` instead.
PATTERN_MESSAGE = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
_PATTERN_MESSAGE = PATTERN_MESSAGE
_SUFFIX: dict[str, Decimal] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def check_quantity(value: int | float | str) -> int | float | str:
    if isinstance(value, bool):
        raise ValueError("quantities must be a number or a string like '500m' or '2Gi'")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("quantities must be finite")
    if _QUANTITY.match(str(value)) is None:
        raise ValueError(_PATTERN_MESSAGE)  # the message native decoding gives; field errors add `pattern_message`
    return value


# A number and a unit as people write sizes elsewhere: `8GB`, `8 gib`, `512MB`, `1.5T`, `100 bytes`.
_WRITTEN_SIZE = re.compile(r"^\s*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))\s*([A-Za-z]*)\s*$")
_DECIMAL_PREFIXES = "kmgtpe"


def suggested_quantities(value: object) -> list[str]:
    """The quantities a string that is not one most likely means: `8GB` -> [`8G`, `8Gi`], `8gib` -> [`8Gi`]."""
    if not isinstance(value, str):
        return []
    match = _WRITTEN_SIZE.match(value)
    if match is None:
        return []
    number, unit = match.group(1), match.group(2).lower()
    if unit in ("b", "byte", "bytes"):
        return [number]
    if not unit or unit[0] not in _DECIMAL_PREFIXES:
        return [number + match.group(2)] if _QUANTITY.match(number + match.group(2)) else []
    prefix, rest = unit[0], unit[1:]
    decimal = prefix if prefix == "k" else prefix.upper()  # kilo is the one lower-case prefix
    binary = prefix.upper() + "i"
    if rest in ("i", "ib"):
        return [number + binary]
    if rest in ("", "b"):
        return [number + decimal, number + binary]
    return []


# What a quantity looks like, said with examples that fit the field: a metric's target is a plain number more often
# than a size. The pattern itself (120 characters of regular expression) helps nobody who got it wrong.
_SIZE_EXAMPLES = "500m, 2Gi or 8G"
_METRIC_EXAMPLES = "10, 0.5 or 500m"


def quantity_hint(path: str = "") -> str:
    """What a quantity at `path` is, with examples that fit the field."""
    examples = _METRIC_EXAMPLES if path.endswith("targetValue") else _SIZE_EXAMPLES
    return f"not a quantity: write a number with an optional suffix, such as {examples}"


def type_message(path: str = "") -> str:
    """Why a value that is neither an integer nor a string is no quantity at `path`, with examples that fit."""
    if path.endswith("targetValue"):
        return "quantities must be an integer or a string such as '10', '0.5' or '500m'"
    return TYPE_MESSAGE


def pattern_message(value: object, *, path: str = "") -> str:
    """Why `value` is not a quantity, led by what it most likely means (`8GB`: `8G` or `8Gi`)."""
    suggestions = [f'"{text}"' for text in suggested_quantities(value) if text != value]
    if not suggestions:
        return quantity_hint(path)
    meant = " or ".join(suggestions)
    powers = ""
    if len(suggestions) == 2:  # a decimal and a binary prefix: say which is which
        decimal, binary = (text.strip('"').lstrip("+-.0123456789") for text in suggestions)
        powers = (
            f" ({decimal} is 10^{_EXPONENTS[decimal.lower()]}, {binary} is 2^{_EXPONENTS[decimal.lower()] // 3 * 10})"
        )
    return f"did you mean {meant}?{powers}"


_EXPONENTS = {"k": 3, "m": 6, "g": 9, "t": 12, "p": 15, "e": 18}


def quantity_value(value: int | float | str) -> Decimal:
    """The numeric value of a quantity (`500m` -> 0.5, `2Gi` -> 2147483648)."""
    text = str(check_quantity(value))
    match = re.match(r"^([+-]?[0-9.]+)([a-zA-Z]*)$", text)
    try:
        if match and match.group(2) in _SUFFIX:
            return Decimal(match.group(1)) * _SUFFIX[match.group(2)]
        return Decimal(text)
    except InvalidOperation as error:
        raise ValueError(f"not a quantity: {text!r}") from error


# Refused with this fixed text in native code; decoding says `quantity_hint(path)` instead.
TYPE_MESSAGE = "quantities must be an integer or a string such as '500m' or '2Gi'"
_TYPE_MESSAGE = TYPE_MESSAGE
# The same language for pydantic-core's regular expressions, whose `$` matches only at the very end: Python's
# (which `check_quantity` uses) also matches before a final newline.
_NATIVE_PATTERN = QUANTITY_PATTERN.removesuffix("$") + r"\n?$"


def _quantity_schema(_source: Any, _handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
    """Strings and integers are decided in native code; other numbers reach Python, where an integral float
    (`2.0`) is the integer it stands for and nothing else (a boolean, a fraction: `0.5` must be written as
    `"500m"` or `"0.5"`) is a quantity. Each refusal is one error with `check_quantity`'s reason.

    Decoding a ModelBooster checks one quantity per resource limit and request, and every admission request
    decodes one: decided in Python, they cost a quarter of the decoding."""
    string = core_schema.str_schema(strict=True)
    integer = core_schema.int_schema(strict=True)
    kind = core_schema.union_schema(
        [string, integer, core_schema.no_info_plain_validator_function(integral_float)],
        mode="left_to_right",
        custom_error_type="value_error",
        custom_error_context={"error": _TYPE_MESSAGE},
    )
    # A string is checked against the pattern, which every integer matches. Strings first: they are the common
    # quantity, and a union member that fails costs about as much as one that succeeds.
    text = core_schema.union_schema(
        [core_schema.str_schema(strict=True, pattern=_NATIVE_PATTERN), integer],
        mode="left_to_right",
        custom_error_type="value_error",
        custom_error_context={"error": _PATTERN_MESSAGE},
    )
    return core_schema.chain_schema([kind, text])


Quantity = Annotated[
    StrictInt | StrictStr,
    GetPydanticSchema(_quantity_schema),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
