"""Structural schemas of custom resources: pruning, defaulting and validation, with the real messages."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of, status_of
from tests.apiserver.widgets import GROUP, PLURAL, VERSION, widget
from tests.fakeapi import errors, schema

OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "a": {"type": "string", "default": "x"},
                "nested": {
                    "type": "object",
                    "properties": {"b": {"type": "integer", "default": 2}},
                },
                "list": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"c": {"type": "boolean", "default": True}}},
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "map": {
                    "type": "object",
                    "additionalProperties": {"type": "object", "properties": {"d": {"type": "string"}}},
                },
                "maybe": {"type": "string", "nullable": True},
                "never": {"type": "string", "default": "d"},
            },
        }
    },
}

# Seen on kube-apiserver v1.36.2: after an OpenAPI error of a blocking type (wrong type, required, enum, too long,
# too many) the CEL rules are not run, and the Widget schema has rules, so this error is added.
NOT_CHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)


def blocked(message: str) -> str:
    return f"[{message}, {NOT_CHECKED}]"


def create(custom: Any, body: dict[str, Any], **kwargs: Any) -> Any:
    return custom.create_namespaced_custom_object_with_http_info(GROUP, VERSION, "default", PLURAL, body, **kwargs)


def test_pruning_drops_undeclared_fields_and_reports_their_paths() -> None:
    obj = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n", "bogus": 1},
        "spec": {
            "a": "1",
            "extra": 1,
            "nested": {"b": 1, "z": 2},
            "list": [{"c": False, "y": 1}],
            "free": {"anything": {"goes": 1}},
            "map": {"k": {"d": "v", "e": 1}},
        },
        "top": 1,
    }
    unknown = schema.prune(obj, OBJECT_SCHEMA)
    assert sorted(unknown) == sorted(
        ["metadata.bogus", "spec.extra", "spec.nested.z", "spec.list[0].y", "spec.map.k.e", "top"]
    )
    assert obj == {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n"},
        "spec": {
            "a": "1",
            "nested": {"b": 1},
            "list": [{"c": False}],
            "free": {"anything": {"goes": 1}},
            "map": {"k": {"d": "v"}},
        },
    }


def test_defaults_apply_top_down_and_nulls_are_dropped_unless_nullable() -> None:
    obj: dict[str, Any] = {"spec": {"nested": {}, "list": [{}, {"c": False}], "maybe": None, "never": None}}
    schema.apply_defaults(obj, OBJECT_SCHEMA)
    assert obj == {
        "spec": {"a": "x", "nested": {"b": 2}, "list": [{"c": True}, {"c": False}], "maybe": None, "never": "d"}
    }
    absent: dict[str, Any] = {}
    schema.apply_defaults(absent, OBJECT_SCHEMA)
    assert absent == {}  # no spec, so no defaults inside spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"size": "huge"},
            blocked('spec.size: Unsupported value: "huge": supported values: "small", "medium", "large"'),
        ),
        ({}, blocked("spec.size: Required value")),
        (
            {"size": "small", "replicas": 11},
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ),
        (
            {"size": "small", "replicas": -1},
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            {"size": "small", "replicas": "2"},
            blocked('spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'),
        ),
        ({"size": "small", "color": "abcdefghijk"}, blocked("spec.color: Too long: may not be more than 10 bytes")),
        (
            {"size": "small", "color": "Red"},
            "spec.color: Invalid value: \"Red\": spec.color in body should match '^[a-z]+$'",
        ),
        ({"size": "small", "ratio": 0}, "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"),
        ({"size": "small", "tags": ["a", "b", "c", "d"]}, blocked("spec.tags: Too many: 4: must have at most 3 items")),
        ({"size": "small", "tags": ["a", "a"]}, 'spec.tags[1]: Duplicate value: "a"'),
        (
            {"size": "small", "parts": [{"name": "p"}, {"name": "p"}]},
            'spec.parts[1]: Duplicate value: {"name":"p"}',
        ),
        (
            {"size": "small", "labels": {"k": 1}},
            blocked(
                'spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type string: "integer"'
            ),
        ),
    ],
)
def test_schema_violations_are_422_invalid_with_the_field_error(
    custom: Any, spec: dict[str, Any], message: str
) -> None:
    body = widget("w1")
    body["spec"] = spec
    with pytest.raises(ApiException) as caught:
        create(custom, body)
    assert caught.value.status == 422
    status = status_of(caught.value)
    assert status["reason"] == "Invalid"
    assert status["message"] == f'Widget.example.fakeapi.io "w1" is invalid: {message}'
    assert status["details"]["kind"] == "Widget"
    assert status["details"]["group"] == GROUP
    assert len(status["details"]["causes"]) == (2 if NOT_CHECKED in message else 1)


def test_several_errors_are_listed_in_brackets(custom: Any) -> None:
    body = widget("w1", size="huge", replicas=99)
    with pytest.raises(ApiException) as caught:
        create(custom, body)
    status = status_of(caught.value)
    assert status["message"] == (
        'Widget.example.fakeapi.io "w1" is invalid: [spec.replicas: Invalid value: 99: spec.replicas in body should be '
        'less than or equal to 10, spec.size: Unsupported value: "huge": supported values: "small", "medium", "large", '
        f"{NOT_CHECKED}]"
    )
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.replicas", "spec.size", "<nil>"]
    assert [c["reason"] for c in status["details"]["causes"]] == [
        "FieldValueInvalid",
        "FieldValueNotSupported",
        "FieldValueInvalid",
    ]


def test_unknown_fields_are_pruned_with_a_warning(custom: Any) -> None:
    body = widget("w1")
    body["spec"]["extra"] = 1
    data, code, headers = create(custom, body)
    assert code == 201
    assert "extra" not in data["spec"]
    assert headers["Warning"] == '299 - "unknown field \\"spec.extra\\""'


def test_unknown_fields_are_an_error_with_strict_field_validation(custom: Any) -> None:
    body = widget("w1")
    body["spec"]["extra"] = 1
    with pytest.raises(ApiException) as caught:
        create(custom, body, field_validation="Strict")
    assert caught.value.status == 400
    assert message_of(caught.value) == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.extra"'
    )


def test_preserved_unknown_fields_are_kept(custom: Any) -> None:
    data, _, _ = create(custom, widget("w1", config={"any": {"thing": [1, 2]}}))
    assert data["spec"]["config"] == {"any": {"thing": [1, 2]}}


def test_defaults_inside_list_items(custom: Any) -> None:
    data, _, _ = create(custom, widget("w1", parts=[{"name": "a"}, {"name": "b", "count": 5}]))
    assert data["spec"]["parts"] == [{"name": "a", "count": 1}, {"name": "b", "count": 5}]


def test_cel_rule_with_reason_and_field_path(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1", legacy={"x": 1}))
    assert caught.value.status == 422
    status = status_of(caught.value)
    assert status["message"] == (
        'Widget.example.fakeapi.io "w1" is invalid: spec.legacy: Forbidden: legacy is not supported; use config'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: legacy is not supported; use config",
            "field": "spec.legacy",
        }
    ]


def test_cel_rule_without_reason_is_an_invalid_value_with_no_value_shown(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1", primary="a", secondary="b"))
    assert message_of(caught.value) == (
        'Widget.example.fakeapi.io "w1" is invalid: spec: Invalid value: set primary or secondary, not both'
    )


def test_cel_transition_rule_runs_on_update_only(custom: Any) -> None:
    create(custom, widget("w1", size="small"))
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"size": "large"}})
    assert message_of(caught.value) == (
        'Widget.example.fakeapi.io "w1" is invalid: spec.size: Invalid value: "large": size is immutable'
    )


def test_validator_reports_nullable_and_type_errors_directly() -> None:
    errs = schema.validate(
        {"spec": {"a": None, "nested": "no"}}, {"type": "object", "properties": OBJECT_SCHEMA["properties"]}, None
    )
    assert [str(e) for e in errs] == [
        'spec.a: Invalid value: "null": spec.a in body must be of type string: "null"',
        'spec.nested: Invalid value: "string": spec.nested in body must be of type object: "string"',
    ]


def test_field_error_formatting_follows_apimachinery() -> None:
    assert str(errors.invalid("spec.x", 1.5, "why")) == "spec.x: Invalid value: 1.5: why"
    assert str(errors.invalid("spec.x", True, "why")) == "spec.x: Invalid value: true: why"
    assert str(errors.invalid("spec.x", {"b": 1, "a": "x"}, "why")) == ('spec.x: Invalid value: {"a":"x","b":1}: why')
    assert str(errors.required("spec.x", "")) == "spec.x: Required value"
    assert str(errors.forbidden("spec.x", "no")) == "spec.x: Forbidden: no"
    assert str(errors.too_many("spec.x", 4, 3)) == "spec.x: Too many: 4: must have at most 3 items"
    assert errors.aggregate([errors.required("a"), errors.required("a")]) == "a: Required value"


@pytest.mark.parametrize(
    ("value", "text"),
    [(10.0, "10"), (0.5, "0.5"), (1e6, "1e+06"), (123456.0, "123456"), (1e-5, "1e-05"), (-2.25, "-2.25")],
)
def test_floats_print_like_go(value: float, text: str) -> None:
    assert errors.go_float(value) == text
