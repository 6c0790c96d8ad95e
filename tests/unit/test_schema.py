"""shared/schema.py: pydantic JSON schema rewritten into the structural form CRDs require."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1ResourceFieldSelector
from pydantic import BaseModel, ConfigDict, Field

from shared.schema import SchemaError, structural_problems, structural_schema


class Leaf(BaseModel):
    """A leaf."""

    size: int = Field(gt=0, lt=10)


class Free(BaseModel):
    model_config = ConfigDict(extra="allow")

    known: str | None = None


class Root(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    leaf: Leaf | None = None
    leaves: list[Leaf] = Field(default_factory=list, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    mode: str = Field(default="a", json_schema_extra={"enum": ["a", "b"]})
    port: int | str = 8080
    labels: dict[str, str] | None = None
    free: Free | None = None
    anything: dict[str, Any] | None = None
    divisor: V1ResourceFieldSelector | None = None


def test_optional_fields_collapse_and_refs_inline() -> None:
    schema = structural_schema(Root)
    assert structural_problems(schema) == []
    assert schema["required"] == ["name"]
    assert schema["properties"]["leaf"] == {
        "description": "A leaf.",
        "properties": {
            "size": {"minimum": 0, "exclusiveMinimum": True, "maximum": 10, "exclusiveMaximum": True, "type": "integer"}
        },
        "required": ["size"],
        "type": "object",
    }
    assert schema["properties"]["leaves"]["x-kubernetes-list-type"] == "atomic"
    assert schema["properties"]["labels"] == {"additionalProperties": {"type": "string"}, "type": "object"}


def test_int_or_string_extra_allow_and_free_maps() -> None:
    properties = structural_schema(Root)["properties"]
    assert properties["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert properties["port"]["x-kubernetes-int-or-string"] is True
    assert "type" not in properties["port"]
    assert properties["free"]["x-kubernetes-preserve-unknown-fields"] is True
    assert properties["anything"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert properties["mode"]["default"] == "a"


def test_kubernetes_quantities_become_int_or_string_and_docstring_noise_is_dropped() -> None:
    divisor = structural_schema(Root)["properties"]["divisor"]
    assert divisor["properties"]["divisor"]["x-kubernetes-int-or-string"] is True
    assert "Attributes:" not in divisor["description"]


def test_descriptions_of_core_types_can_be_left_out() -> None:
    divisor = structural_schema(Root, core_descriptions=False)["properties"]["divisor"]
    assert "description" not in divisor
    assert "description" not in divisor["properties"]["resource"]


class Node(BaseModel):
    children: list[Node] | None = None


class Union(BaseModel):
    value: int | list[int]


def test_what_a_structural_schema_cannot_say_is_an_error() -> None:
    with pytest.raises(SchemaError, match="recursive type Node"):
        structural_schema(Node)
    with pytest.raises(SchemaError, match="not structural"):
        structural_schema(Union)


def test_structural_problems_are_named() -> None:
    assert structural_problems({"properties": {"a": {}}, "type": "object"}) == [".a: no type"]
    assert structural_problems({"type": "object", "additionalProperties": False}) == [": additionalProperties false"]
    assert structural_problems({"anyOf": [{"type": "string"}, {"type": "object"}]}) == [
        ": anyOf other than int-or-string",
        ": no type",
    ]
    bad_map: dict[str, Any] = {
        "type": "array",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    assert structural_problems(bad_map) == [": list-map key name is not required in the items"]
