"""Test helpers that read a generated CRD the way kube-apiserver would, for the parts our tests need:
the schema at a path, the fields it would prune, and the CEL rules as they run when an object is created
(evaluated by the fake API server's CEL subset, which refuses what it cannot evaluate)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from shared.crds import crds
from tests.fakeapi import cel


def crd_by_kind(kind: str) -> dict[str, Any]:
    for definition in crds():
        if definition["spec"]["names"]["kind"] == kind:
            return definition
    raise KeyError(kind)


def openapi_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = crd_by_kind(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def schema_at(schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """`spec.backends[].workers[].config` style paths."""
    node = schema
    for segment in path.split("."):
        node = node["properties"][segment.removesuffix("[]")]
        if segment.endswith("[]"):
            node = node["items"]
    return node


def walk_schema(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from walk_schema(child, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), Mapping):
        yield from walk_schema(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from walk_schema(schema["additionalProperties"], f"{path}[*]")


def undeclared_fields(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Fields the API server would prune (kubectl's strict validation calls them unknown)."""
    found: list[str] = []
    if isinstance(value, dict) and not schema.get("x-kubernetes-preserve-unknown-fields"):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child_path = f"{path}.{key}" if path else key
            if properties is not None and key in properties:
                found.extend(undeclared_fields(item, properties[key], child_path))
            elif isinstance(extra, Mapping):
                found.extend(undeclared_fields(item, extra, f"{path}[{key}]"))
            elif not (path == "metadata" or child_path == "metadata"):
                found.append(child_path)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            found.extend(undeclared_fields(item, schema["items"], f"{path}[{index}]"))
    return found


def passes_on_create(rule: Mapping[str, Any], value: Any) -> bool:
    """Whether a rule admits `value` in a new object: a transition rule runs then only with optionalOldSelf
    (its `oldSelf` holds no value). A rule outside the fake's CEL subset fails the test, never a guess."""
    program = cel.compile_rule(rule["rule"])
    if cel.uses_old_self(program) and rule.get("optionalOldSelf") is not True:
        return True
    return cel.evaluate(program, {"self": value, "oldSelf": cel.NONE}) is True


# How kube-apiserver introduces a failed rule's message, by the rule's `reason` (valueless types only).
_REASON_TEXT = {"FieldValueForbidden": "Forbidden", "FieldValueRequired": "Required value"}


def cel_denials(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """The lines kube-apiserver prints for the failing rules, e.g. `<path><fieldPath>: Forbidden: <message>`."""
    lines: list[str] = []
    if value is None:
        return lines
    for rule in schema.get("x-kubernetes-validations", []):
        if not passes_on_create(rule, value):
            reason = _REASON_TEXT[rule["reason"]]
            lines.append(f"{path}{rule.get('fieldPath', '')}: {reason}: {rule['message']}")
    if isinstance(value, dict):
        for key, item in value.items():
            child = schema.get("properties", {}).get(key)
            if child is not None:
                lines.extend(cel_denials(item, child, f"{path}.{key}" if path else key))
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            lines.extend(cel_denials(item, schema["items"], f"{path}[{index}]"))
    return lines
