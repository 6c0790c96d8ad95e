"""Field sets as structured-merge-diff builds them (the basis of managedFields and apply)."""

from __future__ import annotations

from typing import Any

from tests.fakeapi import fieldpath as fp

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string"},
                            "name": {"type": "string"},
                        },
                    },
                },
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "empty": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
    },
}


def test_apply_field_sets_hold_leaves_list_items_and_map_entries() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "n", "labels": {"a": "1"}},
        "spec": {
            "replicas": 2,
            "ports": [{"port": 80, "protocol": "TCP", "name": "http"}],
            "tags": ["x"],
            "args": ["--a", "--b"],
            "env": {"K": "V"},
            "empty": {},
        },
    }
    assert fp.encode(fp.to_field_set(obj, SCHEMA)) == {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}},
            "f:tags": {'v:"x"': {}},
            "f:args": {},
            "f:env": {"f:K": {}},
            "f:empty": {},
        },
    }


def test_fields_v1_round_trip() -> None:
    fields = {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}
    assert fp.encode(fp.decode(fields)) == fields


def test_compare_reports_added_modified_and_removed() -> None:
    old = {"spec": {"replicas": 1, "tags": ["a"], "env": {"K": "V"}}}
    new = {"spec": {"replicas": 2, "tags": ["a", "b"], "args": ["x"]}}
    added, modified, removed = fp.compare(old, new, SCHEMA)
    assert added == {("f:spec", "f:tags", 'v:"b"'), ("f:spec", "f:args")}
    assert modified == {("f:spec", "f:replicas")}
    assert removed == {("f:spec", "f:env"), ("f:spec", "f:env", "f:K")}


def test_path_strings_match_conflict_messages() -> None:
    assert fp.path_string(("f:spec", "f:replicas")) == ".spec.replicas"
    assert fp.path_string(("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', "f:name")) == (
        '.spec.ports[port=80,protocol="TCP"].name'
    )
    assert fp.path_string(("f:metadata", "f:finalizers", 'v:"a/b"')) == '.metadata.finalizers[="a/b"]'


def test_named_field_ancestors() -> None:
    paths = {("f:spec", "f:env", "f:K"), ("f:metadata", "f:labels", "f:a")}
    assert fp.with_named_fields(paths, SCHEMA) == paths | {
        ("f:spec",),
        ("f:spec", "f:env"),
        ("f:metadata",),
        ("f:metadata", "f:labels"),
    }


def test_merge_keeps_live_only_items_in_place_and_follows_the_configurations_order() -> None:
    live = {"spec": {"tags": ["a", "x", "b"]}}
    merged = fp.merge(live, {"spec": {"tags": ["b", "c", "a"]}}, fp.root_schema(SCHEMA))
    assert merged["spec"]["tags"] == ["x", "b", "c", "a"]


def test_remove_paths_deletes_subtrees() -> None:
    obj = {"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}], "replicas": 1}}
    fp.remove_paths(obj, {("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'), ("f:spec", "f:replicas")}, SCHEMA)
    assert obj == {"spec": {"ports": [{"port": 81, "protocol": "TCP"}]}}
