"""Decode raw JSON into an API model, turning every failure into field errors with real JSON paths.

Pydantic reports locations as tuples that mix JSON keys, list indices and union-member tags
(`('spec', 'backends', 0, 'workers', 0, 'replicas')`). We walk the model's structural schema alongside
the location so that object fields print as `.field`, map keys as `[key]` (apimachinery's form, e.g.
`resources.limits[nvidia.com/gpu]`) and tags disappear. Messages follow kube-apiserver's schema wording.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import replace
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from shared.errors import ROOT_PATH, FieldError
from shared.fieldpath import BadFieldPath, parse
from shared.gotext import go_quote
from shared.json_values import NOT_JSON, not_json_details
from shared.offered_values import supported_values_detail
from shared.quantity import PATTERN_MESSAGE, TYPE_MESSAGE, pattern_message, type_message
from shared.schema import structural_schema
from shared.spelling import closest, did_you_mean

M = TypeVar("M", bound=BaseModel)

_TYPE_NAMES: dict[str, str] = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "string_type": "string",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "tuple_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "mapping_type": "object",
}


def decode(model: type[M], obj: Mapping[str, Any], *, limit: int | None = None) -> tuple[M | None, list[FieldError]]:
    """The model, or None with the field errors that explain why the object does not decode (the first
    `limit` of them, when given)."""
    typed, details = decode_details(model, obj)
    return typed, field_errors(details, model=model, limit=limit) if details else []


def without_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` as its spec model reads it: a status (ours, or anyone's) never makes an object invalid."""
    return {key: value for key, value in obj.items() if key != "status"}


def decode_details(model: type[M], obj: Mapping[str, Any]) -> tuple[M | None, list[ErrorDetails]]:
    """The model, or None with pydantic's account of every failure (where in the object, and why)."""
    try:
        # The validator itself: `model_validate`'s own argument handling costs as much as decoding a small model.
        # Wire names only: Python code builds models by field name, but `min_replicas` in a manifest is a field
        # the API server does not know (it prunes or refuses it), not `minReplicas`.
        return model.__pydantic_validator__.validate_python(obj, by_alias=True, by_name=False), []
    except ValidationError as error:
        return None, list(_explained(error.errors(include_url=False)))


def field_errors(
    details: Sequence[ErrorDetails], *, model: type[BaseModel], limit: int | None = None
) -> list[FieldError]:
    schema = structural_schema(model)
    result: list[FieldError] = []
    seen: set[str] = set()
    for detail in details:
        if limit is not None and len(result) >= limit:
            break  # rendering a location is what costs; a hostile object can hold tens of thousands
        path, node = render_location(detail["loc"], schema)
        if path in seen:  # one error per field: a union reports once per member
            continue
        seen.add(path)
        found = _field_error(detail, path=path, node=node)
        if detail["type"] == "extra_forbidden":
            found = _with_suggestion(found, loc=detail["loc"], schema=schema)
        result.append(found)
    return result


def _explained(details: Iterable[ErrorDetails]) -> Iterator[ErrorDetails]:
    """The errors, where a free-form value refused as a whole (shared/json_values.py `AnyJson`) is replaced by
    the errors that say where in it, and why."""
    for detail in details:
        if detail["type"] != NOT_JSON:
            yield detail
            continue
        for inner in not_json_details(detail.get("input")) or [{**detail, "loc": ()}]:
            yield cast(ErrorDetails, {**inner, "loc": (*detail["loc"], *inner["loc"])})


def _with_suggestion(error: FieldError, *, loc: Sequence[int | str], schema: Mapping[str, Any]) -> FieldError:
    """Name the declared field an unknown one is most likely a typo of (`replicase` -> `replicas`)."""
    unknown = loc[-1]
    _, parent = render_location(loc[:-1], schema)
    declared = list(parent.get("properties", {}))
    meant = closest(unknown, declared) if isinstance(unknown, str) else None
    if meant is None:
        return error
    return FieldError(path=error.path, type=error.type, detail=f"{error.detail}; {did_you_mean(meant)}")


def with_missing_hints(
    errors: Iterable[FieldError],
    *,
    obj: Mapping[str, Any],
    schema: Mapping[str, Any],
    choices: Mapping[str, Sequence[str]] | None = None,
) -> list[FieldError]:
    """The errors, where a required field is missing while an undeclared one beside it is its likely typo
    (`modelUri` for `modelURI`): `Required value: found "modelUri": did you mean "modelURI"?`. A Required error
    about an object as a whole (it must set one of some fields) names them in `choices`, by the object's path."""
    return [_missing_hint(error, obj=obj, schema=schema, choices=choices or {}) for error in errors]


def _missing_hint(
    error: FieldError, *, obj: Mapping[str, Any], schema: Mapping[str, Any], choices: Mapping[str, Sequence[str]]
) -> FieldError:
    if error.type != "Required":
        return error
    try:
        steps = parse(error.path)
    except BadFieldPath:
        return error
    if error.path in choices:
        holder_steps, wanted = steps, tuple(choices[error.path])
    elif steps and isinstance(steps[-1], str):
        holder_steps, wanted = steps[:-1], (steps[-1],)
    else:
        return error
    holder, node = _value_and_node(obj, holder_steps, schema)
    if not isinstance(holder, Mapping):
        return error
    declared = list(node.get("properties", {}))
    for key in holder:
        if isinstance(key, str) and key not in declared:
            meant = closest(key, declared)
            if meant in wanted and meant not in holder:
                detail = f"{error.detail}; " if error.detail else ""
                return replace(error, detail=f"{detail}found {go_quote(key)}: {did_you_mean(meant)}")
    return error


def _value_and_node(
    obj: object, steps: Sequence[str | int], schema: Mapping[str, Any]
) -> tuple[object, Mapping[str, Any]]:
    """The value at `steps` in a raw object and its schema node (empty when the schema does not say)."""
    node: Mapping[str, Any] = schema
    for step in steps:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and 0 <= step < len(obj) else None
            node = node.get("items", {})
        else:
            obj = obj.get(step) if isinstance(obj, Mapping) else None
            properties = node.get("properties", {})
            extra = node.get("additionalProperties")
            node = properties.get(step) or (extra if isinstance(extra, Mapping) else {})
    return obj, node


def render_location(loc: Sequence[int | str], schema: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """A pydantic location as an apimachinery field path, and the schema node it ends at."""
    path = ""
    node: Mapping[str, Any] = schema
    for position, segment in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(segment, int):
            if node.get("type") == "array":
                path += f"[{segment}]"
                node = node.get("items", {})
            continue
        properties = node.get("properties", {})
        extra = node.get("additionalProperties")
        if segment in properties:
            path += f".{segment}" if path else segment
            node = properties[segment]
        elif isinstance(extra, Mapping):
            path += f"[{segment}]"
            node = extra
        elif node.get("type") == "object" and (last or node.get("x-kubernetes-preserve-unknown-fields")):
            path += f".{segment}" if path else segment
            node = {}
        # anything else is the tag of a union member, which has no place in a JSON path
    return path or ROOT_PATH, node


def _field_error(detail: ErrorDetails, *, path: str, node: Mapping[str, Any]) -> FieldError:
    kind = detail["type"]
    value = detail.get("input")
    context: Mapping[str, Any] = detail.get("ctx") or {}
    if kind == "missing":
        return FieldError(path=path, type="Required", detail="")
    if kind == "extra_forbidden":
        return FieldError(path=path, type="Forbidden", detail="field not declared in schema")
    if kind in _TYPE_NAMES:
        detail_text = f"must be of type {_TYPE_NAMES[kind]}"
        if path == "spec.backends" and isinstance(value, Mapping):  # one backend written under the list's name
            detail_text += ": a list of backends (`- name: ...`); one backend alone is written as spec.backend"
        return FieldError(path=path, type="Invalid", value=value, detail=detail_text)
    if kind in ("literal_error", "enum"):
        allowed = [str(option) for option in node.get("enum") or []]
        return FieldError(path=path, type="NotSupported", value=value, detail=supported_values_detail(value, allowed))
    if kind == "greater_than_equal":
        return FieldError(
            path=path, type="Invalid", value=value, detail=f"must be greater than or equal to {context['ge']}"
        )
    if kind == "greater_than":
        return FieldError(path=path, type="Invalid", value=value, detail=f"must be greater than {context['gt']}")
    if kind == "less_than_equal":
        return FieldError(
            path=path, type="Invalid", value=value, detail=f"must be less than or equal to {context['le']}"
        )
    if kind == "less_than":
        return FieldError(path=path, type="Invalid", value=value, detail=f"must be less than {context['lt']}")
    if kind == "string_pattern_mismatch":
        return FieldError(path=path, type="Invalid", value=value, detail=f"should match '{context['pattern']}'")
    if kind == "string_too_long":
        return FieldError(path=path, type="TooLong", detail=f"may not be more than {context['max_length']} characters")
    if kind == "string_too_short":
        return FieldError(
            path=path, type="Invalid", value=value, detail=f"should be at least {context['min_length']} characters long"
        )
    if kind == "too_short":
        count = len(value) if isinstance(value, Sized) else value
        return FieldError(
            path=path, type="Invalid", value=count, detail=f"should have at least {context['min_length']} items"
        )
    if kind == "too_long":
        return FieldError(path=path, type="TooMany", detail=f"must have at most {context['max_length']} items")
    if kind == "value_error":
        message = str(context.get("error", detail["msg"]))
        if message == PATTERN_MESSAGE:  # decided in native code, without the value: say what it likely means
            message = pattern_message(value, path=path)
        elif message == TYPE_MESSAGE:
            message = type_message(path)
        return FieldError(path=path, type="Invalid", value=value, detail=message)
    return FieldError(path=path, type="Invalid", value=value, detail=detail["msg"])
