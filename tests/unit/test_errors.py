"""Field errors rendered like apimachinery (docs/design/validation.md §2)."""

from __future__ import annotations

import pytest

from shared.errors import (
    FieldError,
    ValidationFailed,
    duplicate,
    forbidden,
    format_denial,
    invalid,
    render_value,
    required,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3, "3"),
        (-1, "-1"),
        (True, "true"),
        (None, "null"),
        ("abc", '"abc"'),
        ('say "hi"\n', '"say \\"hi\\"\\n"'),
        (1e6, "1000000"),
        (0.5, "0.5"),
        ([1, "a"], '[1,"a"]'),
        ({"b": 1, "a": None}, '{"a":null,"b":1}'),
    ],
)
def test_values_render_like_go(value: object, text: str) -> None:
    assert render_value(value) == text


def test_error_types_render_like_apimachinery() -> None:
    assert invalid("spec.backends[0].minReplicas", 3, "too big").render() == (
        "spec.backends[0].minReplicas: Invalid value: 3: too big"
    )
    assert (
        required("spec.costExpansionRatePercent", "needed").render()
        == "spec.costExpansionRatePercent: Required value: needed"
    )
    assert required("spec", "").render() == "spec: Required value"
    assert forbidden("spec.rateLimit", "no").render() == "spec.rateLimit: Forbidden: no"
    assert duplicate("spec.backends[1].name", "a").render() == 'spec.backends[1].name: Duplicate value: "a"'
    assert FieldError(path="p", type="Internal", detail="boom").render() == "p: Internal error: boom"
    assert FieldError(path="p", type="NotSupported", value="x", detail='supported values: "a"').render() == (
        'p: Unsupported value: "x": supported values: "a"'
    )
    assert FieldError(path="p", type="TooMany", detail="must have at most 16 items").render() == (
        "p: Too many: must have at most 16 items"
    )


def test_cause_reasons_match_kubernetes_status_causes() -> None:
    assert invalid("p", 1, "d").cause_reason == "FieldValueInvalid"
    assert required("p", "d").cause_reason == "FieldValueRequired"
    assert forbidden("p", "d").cause_reason == "FieldValueForbidden"
    assert duplicate("p", 1).cause_reason == "FieldValueDuplicate"


def test_denial_format() -> None:
    errors = [forbidden("spec.a", "x"), invalid("spec.b", "v", "y")]
    assert format_denial(errors) == 'validation failed:\n  - spec.a: Forbidden: x\n  - spec.b: Invalid value: "v": y'
    failure = ValidationFailed(errors)
    assert str(failure) == format_denial(errors)
    assert failure.errors == errors
