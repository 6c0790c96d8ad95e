"""Quantities: the API server's pattern, int-or-string input, numeric values."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from shared.quantity import QUANTITY_PATTERN, Quantity, check_quantity, quantity_value, suggested_quantities

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


QUANTITY_TEXT = st.text(alphabet="0123456789.+-eEnumkMGTPEKi \n", max_size=12) | st.from_regex(
    r"\A[+-]?[0-9]{0,3}(\.[0-9]{0,3})?([eE][+-]?[0-9]{0,2}|[numkMGTPE]|[KMGTPE]i)?\n?\Z"
)


@settings(max_examples=500)
@given(QUANTITY_TEXT)
def test_strings_are_decided_as_check_quantity_decides(text: str) -> None:
    # Strings are matched in native code; `check_quantity` (Python's `re`) is the reference, quirks included:
    # its `$` also matches before a final newline.
    reason = _refusal(text)
    if reason is None:
        assert ADAPTER.validate_python(text) == text
        assert ADAPTER.validate_json(json.dumps(text)) == text
        return
    with pytest.raises(ValidationError) as refused:
        ADAPTER.validate_python(text)
    [detail] = refused.value.errors(include_url=False)
    assert (detail["type"], str(detail["ctx"]["error"]), detail["input"]) == ("value_error", reason, text)


def _refusal(text: str) -> str | None:
    try:
        check_quantity(text)
    except ValueError as error:
        return str(error)
    return None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "quantities must be an integer or a string such as '500m' or '2Gi'"),
        (0.5, "quantities must be an integer or a string such as '500m' or '2Gi'"),
        (None, "quantities must be an integer or a string such as '500m' or '2Gi'"),
        ("2GB", f"quantities must match the regular expression '{QUANTITY_PATTERN}'"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_each_refusal_says_why(value: object, message: str, as_json: bool) -> None:
    def decode() -> object:
        return ADAPTER.validate_json(json.dumps(value)) if as_json else ADAPTER.validate_python(value)

    with pytest.raises(ValidationError) as refused:
        decode()
    [detail] = refused.value.errors(include_url=False)
    assert str(detail["ctx"]["error"]) == message


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("8GB", ["8G", "8Gi"]),
        ("8gb", ["8G", "8Gi"]),
        ("512MB", ["512M", "512Mi"]),
        ("8KB", ["8k", "8Ki"]),
        ("8GiB", ["8Gi"]),
        ("8 gi", ["8Gi"]),
        ("1Gi ", ["1Gi"]),
        ("100 bytes", ["100"]),
        ("abc", []),
        ("8XB", []),
    ],
)
def test_sizes_written_as_elsewhere_get_the_quantity_they_mean(written: str, meant: list[str]) -> None:
    assert suggested_quantities(written) == meant
