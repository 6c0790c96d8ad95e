"""Paths into JSON objects: a tuple of keys (and list indexes), read, written and removed in one way everywhere.

A path such as `("spec", "template", "spec", "containers", 0, "image")` names one field of an object. Reading a
path that is not there answers None; removing one that is not there does nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

PathPart = str | int
Path = tuple[PathPart, ...]


def get_path(obj: Any, path: Sequence[PathPart]) -> Any:
    """The value at `path`, or None where any step is missing or of another type."""
    node = obj
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
    return node


def set_path(obj: dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set the value at `path`, making the objects on the way."""
    node = obj
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def without_paths(obj: dict[str, Any], paths: Iterable[Sequence[PathPart]]) -> dict[str, Any]:
    """A copy of `obj` without the object fields at `paths` (`obj` is left alone; list items are never removed,
    so removing one path shifts no other)."""
    paths = [path for path in paths if path]
    if not paths:
        return dict(obj)
    result = copy.deepcopy(obj)
    for path in paths:
        node = get_path(result, path[:-1])
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return result
