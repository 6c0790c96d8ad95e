"""Which fields of an object a CRD's structural schema would prune, and the object without them.

kube-apiserver drops, without an error, every field of a custom resource that the served version's
`openAPIV3Schema` does not declare (apiextensions-apiserver's pruning): an object property not among
`properties` (unless the node says `x-kubernetes-preserve-unknown-fields: true`), recursively through
`properties`, `items` and `additionalProperties`. `apiVersion`, `kind` and `metadata` at the root and in
`x-kubernetes-embedded-resource` nodes are never pruned here (metadata has rules of its own).

A controller that writes a field the server prunes sees it missing on every read and would write it again
forever; `undeclared_paths` lets it notice instead, and `without_paths` drops such fields before the write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from reconciler.runtime.paths import Path

_ALWAYS_KEPT: Final = frozenset({"apiVersion", "kind", "metadata"})
# Hostile or absurd input: a schema or object deeper than this is not walked further (nothing is reported there).
MAX_DEPTH: Final = 64


def undeclared_paths(obj: Mapping[str, Any], schema: Mapping[str, Any] | None) -> list[Path]:
    """Paths (keys and list indices) of `obj` that `schema` would prune, outermost only, in document order."""
    if not schema:
        return []
    found: list[Path] = []
    _walk(obj, schema, (), found, root=True)
    return found


def _walk(value: Any, schema: Mapping[str, Any], path: Path, found: list[Path], *, root: bool = False) -> None:
    if len(path) > MAX_DEPTH or not isinstance(schema, Mapping):
        return
    if isinstance(value, Mapping):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = root or schema.get("x-kubernetes-embedded-resource") is True
        for key, item in value.items():
            if embedded and key in _ALWAYS_KEPT:
                continue
            sub = properties.get(key)
            if isinstance(sub, Mapping):
                _walk(item, sub, (*path, key), found)
            elif isinstance(extra, Mapping):
                _walk(item, extra, (*path, key), found)
            elif not preserve and extra is not True:
                found.append((*path, key))
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _walk(item, items, (*path, index), found)


def field_name(path: Path) -> str:
    """`spec.roles[].name` for ('spec', 'roles', 3, 'name'): the field, whichever list item it was found in."""
    text = ""
    for step in path:
        text += "[]" if not isinstance(step, str) else (f".{step}" if text else step)
    return text

