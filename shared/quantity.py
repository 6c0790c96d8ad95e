"""Kubernetes resource quantities (int-or-string), checked with the API server's own pattern."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, StrictInt, StrictStr

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)
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
        raise ValueError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    return value


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


_TYPE_MESSAGE = "quantities must be an integer or a string such as '500m' or '2Gi'"


def _quantity_input(value: object) -> object:
    """Accept what the API server's int-or-string schema accepts: integers (integral JSON floats too) and
    strings; never booleans or fractions (`0.5` must be written as the string `"500m"` or `"0.5"`)."""
    if isinstance(value, bool):
        raise ValueError(_TYPE_MESSAGE)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (int, str)):
        return value
    raise ValueError(_TYPE_MESSAGE)


Quantity = Annotated[
    StrictInt | StrictStr,
    BeforeValidator(_quantity_input),
    AfterValidator(check_quantity),
    Field(json_schema_extra={"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]
