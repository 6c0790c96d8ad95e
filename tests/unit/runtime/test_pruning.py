"""Which fields a CRD's structural schema prunes (reconciler/runtime/pruning.py), as apiextensions-apiserver does."""

from __future__ import annotations

from typing import Any

from reconciler.runtime.paths import without_paths
from reconciler.runtime.pruning import field_name, undeclared_paths

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "roles": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
                "empty": {"type": "object"},
            },
        }
    },
}


def test_undeclared_fields_are_found_outermost_with_list_indices() -> None:
    obj = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n", "anything": 1},
        "spec": {
            "replicas": 1,
            "topologySpreadConstraints": [{"maxSkew": 1}],
            "roles": [{"name": "a"}, {"name": "b", "extra": {"deep": 1}}],
            "labels": {"k": "v"},
            "config": {"free": {"form": 1}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"x": 1}, "spec": {"a": "", "b": 2}},
            "empty": {"gone": 1},
        },
        "status": {"phase": "x"},
    }
    paths = undeclared_paths(obj, SCHEMA)
    assert paths == [
        ("spec", "topologySpreadConstraints"),
        ("spec", "roles", 1, "extra"),
        ("spec", "template", "spec", "b"),
        ("spec", "empty", "gone"),
        ("status",),
    ]
    assert [field_name(p) for p in paths] == [
        "spec.topologySpreadConstraints",
        "spec.roles[].extra",
        "spec.template.spec.b",
        "spec.empty.gone",
        "status",
    ]
    fitted = without_paths(obj, paths)
    assert undeclared_paths(fitted, SCHEMA) == []
    assert fitted["spec"]["roles"] == [{"name": "a"}, {"name": "b"}]
    assert "topologySpreadConstraints" in obj["spec"]  # the input is left alone


def test_nothing_is_pruned_without_a_schema_or_when_all_is_declared() -> None:
    assert undeclared_paths({"spec": {"x": 1}}, None) == []
    assert undeclared_paths({"spec": {"replicas": 2, "roles": []}}, SCHEMA) == []


def test_absurd_depth_is_not_walked() -> None:
    deep: dict[str, Any] = {}
    node = deep
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    snode = schema
    for _ in range(200):
        node["a"] = {}
        node = node["a"]
        snode["properties"]["a"] = {"type": "object", "properties": {}}
        snode = snode["properties"]["a"]
    node["extra"] = 1
    assert undeclared_paths(deep, schema) == []

