"""Pydantic model -> structural OpenAPI v3 schema, the form a CustomResourceDefinition requires.

kube-apiserver accepts only *structural* schemas: every node has a `type` (except int-or-string and
preserve-unknown-fields nodes), no `$ref`, no `anyOf` other than the int-or-string form, no
`additionalProperties: false`. Pydantic's JSON schema uses all of those, so we rewrite it here:
references are inlined, `Optional[X]` becomes just X (absence is expressed by `required`), extra-allowed
objects become `x-kubernetes-preserve-unknown-fields`, and the quantities that the `kubernetes` package
types as plain strings become int-or-string with the quantity pattern, as in Kubernetes' own schemas.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel

from shared.quantity import QUANTITY_PATTERN

QUANTITY_SCHEMA: Final[Mapping[str, Any]] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": True,
}

# Fields of core/v1 types holding resource.Quantity that the `kubernetes` client models as `str`
# (found by comparing with Kubernetes' published OpenAPI definitions): (class, field, is_map).
_KUBERNETES_QUANTITIES: Final = (
    ("V1ResourceRequirements", "limits", True),
    ("V1ResourceRequirements", "requests", True),
    ("V1VolumeResourceRequirements", "limits", True),
    ("V1VolumeResourceRequirements", "requests", True),
    ("V1PodSpec", "overhead", True),
    ("V1EmptyDirVolumeSource", "sizeLimit", False),
    ("V1ResourceFieldSelector", "divisor", False),
)

# JSONSchemaProps keywords a CRD may carry (apiextensions.k8s.io/v1); anything else is a generator bug.
_ALLOWED_KEYWORDS: Final = frozenset(
    {
        "type",
        "format",
        "description",
        "default",
        "enum",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "multipleOf",
        "required",
        "properties",
        "additionalProperties",
        "items",
        "anyOf",
        "nullable",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)
_DROPPED_KEYWORDS: Final = frozenset({"title", "discriminator", "examples"})
# kube-apiserver stores a CRD schema as Go's JSONSchemaProps, whose `omitempty` fields vanish when empty: an
# empty map, list or string, and a false flag that is a plain bool (not a pointer). A schema holding one is
# stored without it, so the file never equals what the server holds and re-applying it by another field
# manager conflicts on the atomic `.spec.versions` (seen on v1.36 with `status: {properties: {}}`).
_OMITTED_WHEN_EMPTY: Final = frozenset(
    {
        "properties",
        "required",
        "enum",
        "anyOf",
        "allOf",
        "oneOf",
        "x-kubernetes-validations",
        "x-kubernetes-list-map-keys",
        "type",
        "format",
        "description",
        "pattern",
    }
)
_OMITTED_WHEN_FALSE: Final = frozenset(
    {
        "nullable",
        "uniqueItems",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    }
)


class SchemaError(ValueError):
    """A model uses a construct a structural schema cannot express."""


def structural_schema(model: type[BaseModel], *, core_descriptions: bool = True) -> dict[str, Any]:
    """The structural schema of a model's wire form (camelCase names), as a fresh dict.

    `core_descriptions=False` leaves out the descriptions of core/v1 types (a full PodSpec carries about a
    megabyte of them), as controller-gen's `maxDescLen=0` does.
    """
    return json.loads(json.dumps(_cached_schema(model, core_descriptions)))  # type: ignore[no-any-return]


@functools.cache
def _cached_schema(model: type[BaseModel], core_descriptions: bool) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = raw.pop("$defs", {})
    _patch_kubernetes_quantities(defs)
    if not core_descriptions:
        for name, definition in defs.items():
            if name.startswith("V1"):
                defs[name] = _without_descriptions(definition)
    return _Converter(defs).convert(raw, stack=(model.__name__,), where=model.__name__)


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {key: _without_descriptions(value) for key, value in node.items() if key != "description"}
    if isinstance(node, list):
        return [_without_descriptions(item) for item in node]
    return node


def _patch_kubernetes_quantities(defs: dict[str, Any]) -> None:
    for class_name, field, is_map in _KUBERNETES_QUANTITIES:
        properties = defs.get(class_name, {}).get("properties", {})
        if field not in properties:
            continue
        description = properties[field].get("description")
        replacement: dict[str, Any] = (
            {"type": "object", "additionalProperties": dict(QUANTITY_SCHEMA)} if is_map else dict(QUANTITY_SCHEMA)
        )
        if description:
            replacement["description"] = description
        properties[field] = replacement


def _clean_description(text: str) -> str:
    # The `kubernetes` client appends its own attribute table to every class docstring.
    return text.split("\n\nAttributes:", 1)[0].strip()


class _Converter:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs

    def convert(self, node: Mapping[str, Any], *, stack: tuple[str, ...], where: str) -> dict[str, Any]:
        node = dict(node)
        if "$ref" in node:
            name = str(node.pop("$ref")).rsplit("/", 1)[-1]
            if name in stack:
                raise SchemaError(f"{where}: recursive type {name} cannot be inlined")
            # The referring site's keywords (description, default, list annotations) win over the target's.
            return self.convert({**self._defs[name], **node}, stack=(*stack, name), where=where)
        if "allOf" in node:
            parts = node.pop("allOf")
            if len(parts) != 1:
                raise SchemaError(f"{where}: allOf with {len(parts)} members")
            return self.convert({**parts[0], **node}, stack=stack, where=where)
        if "anyOf" in node:
            return self._convert_union(node, stack=stack, where=where)
        return self._convert_plain(node, stack=stack, where=where)

    def _convert_union(self, node: dict[str, Any], *, stack: tuple[str, ...], where: str) -> dict[str, Any]:
        options = [option for option in node.pop("anyOf") if option != {"type": "null"}]
        if len(options) == 1:
            # Optional[X]: absence is expressed by leaving the field out of `required`.
            return self.convert({**options[0], **node}, stack=stack, where=where)
        converted = [self.convert(option, stack=stack, where=where) for option in options]
        if sorted(option.get("type", "") for option in converted) == ["integer", "string"]:
            result = self._convert_plain({**node, "x-kubernetes-int-or-string": True}, stack=stack, where=where)
            result["anyOf"] = [{"type": "integer"}, {"type": "string"}]
            for option in converted:  # keep string constraints such as the quantity pattern
                for key in ("pattern", "maxLength", "minLength"):
                    if key in option:
                        result.setdefault(key, option[key])
            return result
        raise SchemaError(f"{where}: a union of {[option.get('type') for option in converted]} is not structural")

    def _convert_plain(self, node: dict[str, Any], *, stack: tuple[str, ...], where: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED_KEYWORDS or (key == "default" and value is None):
                continue
            if key == "const":
                result["enum"] = [value]
            elif key == "description":
                result["description"] = _clean_description(str(value))
            elif key == "properties":
                result["properties"] = {
                    name: self.convert(child, stack=stack, where=f"{where}.{name}") for name, child in value.items()
                }
            elif key == "items":
                result["items"] = self.convert(value, stack=stack, where=f"{where}[]")
            elif key == "additionalProperties":
                if value is True:
                    result["x-kubernetes-preserve-unknown-fields"] = True
                elif isinstance(value, Mapping):
                    result["additionalProperties"] = self.convert(value, stack=stack, where=f"{where}[*]")
                # `false` (pydantic's extra="forbid") is what pruning does anyway: drop it.
            elif key in ("ge", "le"):
                # pydantic leaves a bound in its own spelling when a validator wraps the number type
                result["minimum" if key == "ge" else "maximum"] = value
            elif key in ("gt", "lt"):
                bound = "Minimum" if key == "gt" else "Maximum"
                result[bound.lower()] = value
                result[f"exclusive{bound}"] = True
            elif key == "exclusiveMinimum" and not isinstance(value, bool):
                result["minimum"] = value
                result["exclusiveMinimum"] = True
            elif key == "exclusiveMaximum" and not isinstance(value, bool):
                result["maximum"] = value
                result["exclusiveMaximum"] = True
            elif key in _ALLOWED_KEYWORDS:
                result[key] = value
            else:
                raise SchemaError(f"{where}: keyword {key!r} has no place in a CRD schema")
        if "properties" in result and "type" not in result:
            result["type"] = "object"
        if "type" not in result and not (
            result.get("x-kubernetes-preserve-unknown-fields") or result.get("x-kubernetes-int-or-string")
        ):
            raise SchemaError(f"{where}: no type (a structural schema needs one)")
        if "required" in result:
            result["required"] = [name for name in result["required"] if name in result.get("properties", {})]
            if not result["required"]:
                del result["required"]
        return result


def apiserver_form(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as kube-apiserver stores it (the omitempty fields above dropped, at every depth), so that a
    generated CRD round-trips through the server unchanged. `default` values are data and kept as they are."""
    result: dict[str, Any] = {}
    for key, raw in schema.items():
        if key in _OMITTED_WHEN_EMPTY and raw in ({}, [], ""):
            continue
        if key in _OMITTED_WHEN_FALSE and raw is False:
            continue
        value = raw
        if key == "properties":
            value = {name: apiserver_form(child) for name, child in raw.items()}
        elif key in ("items", "additionalProperties") and isinstance(raw, Mapping):
            value = apiserver_form(raw)
        elif key in ("anyOf", "allOf", "oneOf"):
            value = [apiserver_form(option) for option in raw]
        result[key] = value
    return result


def structural_problems(schema: Mapping[str, Any], *, where: str = "") -> list[str]:
    """Why a schema is not structural (empty when it is); used by the tests and as a generator self-check."""
    problems: list[str] = []
    keys = set(schema)
    if "$ref" in keys:
        problems.append(f"{where}: $ref")
    if not keys <= _ALLOWED_KEYWORDS:
        problems.append(f"{where}: unknown keywords {sorted(keys - _ALLOWED_KEYWORDS)}")
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    if "anyOf" in schema and not (
        int_or_string and schema["anyOf"] == [{"type": "integer"}, {"type": "string"}] and "type" not in schema
    ):
        problems.append(f"{where}: anyOf other than int-or-string")
    if "type" not in schema and not int_or_string and schema.get("x-kubernetes-preserve-unknown-fields") is not True:
        problems.append(f"{where}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{where}: both properties and additionalProperties")
    if schema.get("additionalProperties") is False:
        problems.append(f"{where}: additionalProperties false")
    if schema.get("type") == "array" and "items" not in schema:
        problems.append(f"{where}: array without items")
    for name in schema.get("x-kubernetes-list-map-keys", []):
        item = schema.get("items", {})
        if name not in item.get("required", []):
            problems.append(f"{where}: list-map key {name} is not required in the items")
    for name, child in schema.get("properties", {}).items():
        problems.extend(structural_problems(child, where=f"{where}.{name}"))
    if isinstance(schema.get("additionalProperties"), Mapping):
        problems.extend(structural_problems(schema["additionalProperties"], where=f"{where}[*]"))
    if isinstance(schema.get("items"), Mapping):
        problems.extend(structural_problems(schema["items"], where=f"{where}[]"))
    return problems
