"""Field sets in the structured-merge-diff sense, for managed fields and server-side apply.

A path is a tuple of FieldsV1 path elements: `f:<name>` (a field), `k:{"name":"a"}` (an item of a list
keyed by `x-kubernetes-list-map-keys`), `v:"x"` (an item of a set). How a node is merged comes from the
schema: objects with `properties` are structs, `additionalProperties`/unknown content are granular maps,
lists are atomic unless `x-kubernetes-list-type` says `set` or `map`. Without a schema the shape is
deduced like structured-merge-diff does: maps granular, lists atomic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

Obj = dict[str, Any]
Path = tuple[str, ...]
FieldSet = set[Path]

_MISSING: Final = object()

# ObjectMeta's merge rules (metav1 types); applies at `metadata` of every object.
OBJECT_META_SCHEMA: Final[Obj] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "selfLink": {"type": "string"},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": "string"},
        "deletionTimestamp": {"type": "string"},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "ownerReferences": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
            "items": {
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "name": {"type": "string"},
                    "uid": {"type": "string"},
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "finalizers": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "managedFields": {"type": "array", "x-kubernetes-list-type": "atomic"},
    },
}

# Fields no manager owns (structured-merge-diff's stripMeta manager).
STRIPPED: Final[frozenset[Path]] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        ("f:metadata", "f:name"),
        ("f:metadata", "f:namespace"),
        ("f:metadata", "f:creationTimestamp"),
        ("f:metadata", "f:selfLink"),
        ("f:metadata", "f:uid"),
        ("f:metadata", "f:clusterName"),
        ("f:metadata", "f:generation"),
        ("f:metadata", "f:managedFields"),
        ("f:metadata", "f:resourceVersion"),
    }
)


def root_schema(schema: Obj | None) -> Obj:
    """The schema of a whole object: the kind's schema with ObjectMeta rules at `metadata`."""
    base: Obj = dict(schema or {"type": "object", "x-fake-partial": True})
    properties = dict(base.get("properties") or {})
    properties["metadata"] = OBJECT_META_SCHEMA
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    base["properties"] = properties
    return base


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ---- schema navigation ---------------------------------------------------------------------------------


def _child(schema: Obj | None, key: str) -> tuple[Obj | None, bool]:
    """(schema of a map entry, whether it is a declared struct field)."""
    if schema is None:
        return None, False
    properties = schema.get("properties") or {}
    if key in properties:
        found: Obj = properties[key]
        return found, True
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return extra, False
    # Partial schemas of built-in kinds list only the fields whose merge rules matter.
    return None, bool(schema.get("x-fake-partial"))


def _items(schema: Obj | None) -> Obj | None:
    if schema is None:
        return None
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def _list_type(schema: Obj | None) -> str:
    if schema is None:
        return "atomic"
    return str(schema.get("x-kubernetes-list-type", "atomic"))


def _map_keys(schema: Obj | None) -> list[str]:
    return list((schema or {}).get("x-kubernetes-list-map-keys") or [])


def _atomic_map(schema: Obj | None) -> bool:
    return schema is not None and (
        schema.get("x-kubernetes-map-type") == "atomic" or schema.get("x-kubernetes-int-or-string") is True
    )


def item_element(item: Any, schema: Obj | None) -> str:
    """The path element of a list item: `k:{...}` for map lists, `v:...` for sets."""
    if _list_type(schema) == "map":
        keys = _map_keys(schema)
        return "k:" + _compact({k: item.get(k) for k in keys if isinstance(item, dict) and k in item})
    return "v:" + _compact(item)


# ---- field sets --------------------------------------------------------------------------------------


def to_field_set(obj: Obj, schema: Obj | None) -> FieldSet:
    """The fields an applied configuration sets (structured-merge-diff ToFieldSet)."""
    found: FieldSet = set()
    _walk_set(obj, root_schema(schema), (), found)
    return found - STRIPPED


def _walk_set(value: Any, schema: Obj | None, path: Path, found: FieldSet) -> None:
    if isinstance(value, dict) and not _atomic_map(schema):
        for key, child in value.items():
            child_schema, named = _child(schema, key)
            child_path = (*path, "f:" + key)
            _walk_set(child, child_schema, child_path, found)
            if child is None or (isinstance(child, dict) and not child) or not named:
                found.add(child_path)
    elif isinstance(value, list) and _list_type(schema) in ("map", "set"):
        element = _items(schema)
        for item in value:
            item_path = (*path, item_element(item, schema))
            if _list_type(schema) == "map":
                _walk_set(item, element, item_path, found)
            found.add(item_path)
    elif path:
        found.add(path)


def compare(old: Any, new: Any, schema: Obj | None) -> tuple[FieldSet, FieldSet, FieldSet]:
    """(added, modified, removed) between two objects (structured-merge-diff Compare)."""
    comparison = _Comparison()
    comparison.walk(old, new, root_schema(schema), (), root=True)
    return comparison.added - STRIPPED, comparison.modified - STRIPPED, comparison.removed - STRIPPED


def _is_empty(value: Any) -> bool:
    return value is _MISSING or value is None or (isinstance(value, (dict, list)) and not value)


class _Comparison:
    def __init__(self) -> None:
        self.added: FieldSet = set()
        self.modified: FieldSet = set()
        self.removed: FieldSet = set()

    def walk(self, old: Any, new: Any, schema: Obj | None, path: Path, *, root: bool = False) -> None:
        both_empty = _is_empty(old) and _is_empty(new)
        descend_map = (
            (isinstance(old, dict) or old is _MISSING)
            and (isinstance(new, dict) or new is _MISSING)
            and not both_empty
            and not _atomic_map(schema)
        )
        descend_list = (
            (isinstance(old, list) or old is _MISSING)
            and (isinstance(new, list) or new is _MISSING)
            and not both_empty
            and _list_type(schema) in ("map", "set")
        )
        if descend_map:
            self._map(old, new, schema, path)
        elif descend_list:
            self._list(old, new, schema, path)
        else:
            if old is _MISSING and new is not _MISSING:
                self.added.add(path)
            elif new is _MISSING and old is not _MISSING:
                self.removed.add(path)
            elif not _same(old, new):
                self.modified.add(path)
            return
        if not root and not (schema or {}).get("x-fake-struct"):  # a Go struct field is never added itself
            if old is _MISSING:
                self.added.add(path)
            elif new is _MISSING:
                self.removed.add(path)

    def _map(self, old: Any, new: Any, schema: Obj | None, path: Path) -> None:
        old_map: Obj = old if isinstance(old, dict) else {}
        new_map: Obj = new if isinstance(new, dict) else {}
        for key in list(old_map) + [k for k in new_map if k not in old_map]:
            child_schema, _ = _child(schema, key)
            self.walk(old_map.get(key, _MISSING), new_map.get(key, _MISSING), child_schema, (*path, "f:" + key))

    def _list(self, old: Any, new: Any, schema: Obj | None, path: Path) -> None:
        element = _items(schema)
        old_items = {item_element(i, schema): i for i in (old if isinstance(old, list) else [])}
        new_items = {item_element(i, schema): i for i in (new if isinstance(new, list) else [])}
        for pe in list(old_items) + [p for p in new_items if p not in old_items]:
            item_path = (*path, pe)
            old_item = old_items.get(pe, _MISSING)
            new_item = new_items.get(pe, _MISSING)
            if _list_type(schema) == "map":
                self.walk(old_item, new_item, element, item_path)
            elif old_item is _MISSING:
                self.added.add(item_path)
            elif new_item is _MISSING:
                self.removed.add(item_path)


def _same(a: Any, b: Any) -> bool:
    return _compact(a) == _compact(b)


def with_named_fields(paths: Iterable[Path], schema: Obj | None) -> FieldSet:
    """Add the struct-field ancestors of every path (structured-merge-diff EnsureNamedFieldsAreMembers)."""
    result: FieldSet = set()
    root = root_schema(schema)
    for path in paths:
        result.add(path)
        node: Obj | None = root
        for depth, element in enumerate(path[:-1]):
            if element.startswith("f:"):
                node, named = _child(node, element[2:])
                if named:
                    result.add(path[: depth + 1])
            else:
                node = _items(node)
    return result


def remove_paths(obj: Obj, paths: Iterable[Path], schema: Obj | None) -> None:
    """Delete the subtree at each path (in place); paths below an already removed one are skipped."""
    done: list[Path] = []
    for path in sorted(paths, key=len):
        if any(path[: len(p)] == p for p in done):
            continue
        _remove(obj, path, root_schema(schema))
        done.append(path)


def _remove(container: Any, path: Path, schema: Obj | None) -> None:
    element = path[0]
    last = len(path) == 1
    if element.startswith("f:") and isinstance(container, dict):
        key = element[2:]
        if key not in container:
            return
        if last:
            del container[key]
            return
        child_schema, _ = _child(schema, key)
        _remove(container[key], path[1:], child_schema)
    elif isinstance(container, list):
        for index, item in enumerate(container):
            if item_element(item, schema) == element:
                if last:
                    del container[index]
                else:
                    _remove(item, path[1:], _items(schema))
                return


# ---- FieldsV1 encoding ----------------------------------------------------------------------------------


def encode(paths: FieldSet) -> Obj:
    tree: Obj = {}
    members: set[Path] = set(paths)
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    _mark_members(tree, (), members)
    return tree


def _mark_members(node: Obj, path: Path, members: set[Path]) -> None:
    for element in list(node):
        if element == ".":
            continue
        child = node[element]
        child_path = (*path, element)
        if child and child_path in members:
            child["."] = {}
        _mark_members(child, child_path, members)


def decode(fields: Obj) -> FieldSet:
    found: FieldSet = set()
    _decode(fields, (), found)
    return found


def _decode(node: Obj, path: Path, found: FieldSet) -> None:
    for element, child in node.items():
        if element == ".":
            found.add(path)
            continue
        child_path = (*path, element)
        if not child:
            found.add(child_path)
        else:
            _decode(child, child_path, found)


def path_string(path: Path) -> str:
    """structured-merge-diff's Path.String(): `.spec.containers[name="a"].image`."""
    parts = []
    for element in path:
        if element.startswith("f:"):
            parts.append("." + element[2:])
        elif element.startswith("k:"):
            keys = json.loads(element[2:])
            parts.append("[" + ",".join(f"{k}={_compact(v)}" for k, v in keys.items()) + "]")
        elif element.startswith("v:"):
            parts.append("[=" + element[2:] + "]")
        else:
            parts.append("[" + element[2:] + "]")
    return "".join(parts)


# ---- merging an applied configuration ---------------------------------------------------------------


def merge(live: Any, config: Any, schema: Obj | None) -> Any:
    """Merge an applied configuration into the live object (structured-merge-diff Merge)."""
    if isinstance(config, dict) and isinstance(live, dict) and not _atomic_map(schema):
        result = dict(live)
        for key, value in config.items():
            child_schema, _ = _child(schema, key)
            result[key] = merge(live[key], value, child_schema) if key in live else _copy(value)
        return result
    if isinstance(config, list) and isinstance(live, list) and _list_type(schema) in ("map", "set"):
        return _merge_list(live, config, schema)
    return _copy(config)


def _merge_list(live: list[Any], config: list[Any], schema: Obj | None) -> list[Any]:
    """Associative list merge, in structured-merge-diff's order: live-only items keep their place, config
    items follow the configuration's order."""
    element = _items(schema)
    is_map = _list_type(schema) == "map"
    live_order = [item_element(i, schema) for i in live]
    config_order = [item_element(i, schema) for i in config]
    live_by = dict(zip(live_order, live, strict=True))
    config_by = dict(zip(config_order, config, strict=True))
    shared = [pe for pe in config_order if pe in live_by]
    next_shared = shared.pop(0) if shared else None

    def merged(pe: str) -> Any:
        if pe not in live_by:
            return _copy(config_by[pe])
        return merge(live_by[pe], config_by[pe], element) if is_map else _copy(config_by[pe])

    result: list[Any] = []
    li = ri = 0
    while li < len(live_order) or ri < len(config_order):
        if li < len(live_order) and ri < len(config_order):
            pe = live_order[li]
            if pe == config_order[ri]:
                result.append(merged(pe))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in config_by and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(live_order) and live_order[li] not in config_by:
            result.append(live_by[live_order[li]])
            li += 1
            continue
        if ri < len(config_order):
            pe = config_order[ri]
            result.append(merged(pe))
            ri += 1
            if next_shared == pe:
                next_shared = shared.pop(0) if shared else None
        else:
            li += 1
    return result


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def fields_under(paths: Iterable[Path], prefix: Path) -> FieldSet:
    return {p for p in paths if p[: len(prefix)] == prefix}
