"""Quantities: the API server's pattern, int-or-string input, numeric values."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic import TypeAdapter, ValidationError

from shared.quantity import Quantity, check_quantity, quantity_value

ADAPTER: TypeAdapter[int | str] = TypeAdapter(Quantity)


@pytest.mark.parametrize("value", [1, 0, "1", "500m", "2Gi", "1.5", "+1", "-1", "1e3", "1E-3", ".5", "10Ki", "3k"])
def test_accepted(value: int | str) -> None:
    assert ADAPTER.validate_python(value) == value


def test_integral_floats_become_integers() -> None:
    assert ADAPTER.validate_python(2.0) == 2


@pytest.mark.parametrize("value", [True, 0.5, "1.2.3", "2GB", "abc", "", " 1", [1], None])
def test_rejected(value: object) -> None:
    with pytest.raises(ValidationError):
        ADAPTER.validate_python(value)


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("500m", Decimal("0.5")),
        ("2Gi", Decimal(2 * 2**30)),
        (4, Decimal(4)),
        ("1k", Decimal(1000)),
        ("1e3", Decimal(1000)),
    ],
)
def test_values(value: int | str, number: Decimal) -> None:
    assert quantity_value(value) == number


def test_check_quantity_names_the_pattern() -> None:
    with pytest.raises(ValueError, match="regular expression"):
        check_quantity("lots")
