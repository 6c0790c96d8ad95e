"""Field errors rendered like apimachinery (docs/design/validation.md §2)."""

from __future__ import annotations

import pytest

from shared.errors import (
    MAX_COLLECTED_ERRORS,
    MAX_SHOWN_CHARS,
    MAX_SHOWN_ERRORS,
    DenialLine,
    FieldError,
    ValidationFailed,
    clip,
    denial_lines,
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


def test_long_values_paths_and_details_are_clipped() -> None:
    error = invalid("spec." + "k" * 300, "v" * 1000, "d" * 2000)
    assert error.shown_path == "spec." + "k" * 251 + "... (49 more characters)"
    assert error.body() == (
        'Invalid value: "' + "v" * 255 + "... (746 more characters): " + "d" * 1024 + "... (976 more characters)"
    )
    assert error.render() == f"{error.shown_path}: {error.body()}"
    assert invalid("p", "short", "d").body() == 'Invalid value: "short": d'


def test_clip_keeps_short_text_whole() -> None:
    assert clip("abc", 3) == "abc"
    assert clip("abcd", 3) == "abc... (1 more characters)"


def _env_errors(count: int) -> list[FieldError]:
    return [invalid(f"spec.backends[0].env[{index}].value", index, "must be of type string") for index in range(count)]


def test_a_denial_shows_twenty_errors_and_counts_the_rest() -> None:
    lines = denial_lines(_env_errors(25))
    assert len(lines) == MAX_SHOWN_ERRORS + 1 == 21
    assert lines[0] == DenialLine(
        path="spec.backends[0].env[0].value",
        reason="FieldValueInvalid",
        body="Invalid value: 0: must be of type string",
    )
    assert lines[-1] == DenialLine(
        path="spec.backends[0].env", reason="FieldValueInvalid", body="and 5 more errors, not shown"
    )
    message = format_denial(_env_errors(21))
    assert message.splitlines()[-1] == "  - spec.backends[0].env[20].value: and 1 more error, not shown"


def test_a_denial_that_reached_the_collection_limit_says_at_least() -> None:
    lines = denial_lines(_env_errors(MAX_COLLECTED_ERRORS))
    assert lines[-1].body == "and at least 980 more errors, not shown (validation stops after 1000)"


def test_a_denial_stops_showing_errors_at_its_character_budget() -> None:
    errors = [invalid(f"spec.a{index}", "v" * 300, "d" * 1100) for index in range(10)]
    lines = denial_lines(errors)
    shown = lines[:-1]
    assert sum(len(line.path) + len(line.body) for line in shown) <= MAX_SHOWN_CHARS
    assert 1 < len(shown) < 10
    assert lines[-1].body == f"and {10 - len(shown)} more errors, not shown"
    # One error longer than the budget is still shown (clipped), never nothing.
    assert len(denial_lines(errors[:1])) == 1


@pytest.mark.parametrize(
    ("paths", "parent"),
    [
        (["spec.backends[0].env[20].value", "spec.backends[0].env[21].name"], "spec.backends[0].env"),
        (["spec.backends[1].name", "spec.backends[10].name"], "spec.backends"),
        (["spec.backends", "spec.backends[0].name"], "spec.backends"),
        (["spec.a.b", "spec.a1", "spec.a[0]"], "spec"),
        (["spec.x", "metadata.name"], "<root>"),
        (["spec.only"], "spec.only"),
    ],
)
def test_the_count_of_errors_not_shown_names_their_common_parent(paths: list[str], parent: str) -> None:
    shown = [forbidden(f"spec.shown{index}", "") for index in range(MAX_SHOWN_ERRORS)]
    hidden = [forbidden(path, "") for path in paths]
    assert denial_lines([*shown, *hidden])[-1].path == parent
