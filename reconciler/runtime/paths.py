"""Paths into JSON objects: a tuple of keys, list indexes and keyed list items, read, written and removed in one
way everywhere.

A path such as `("spec", "template", "spec", "containers", 0, "image")` names one field of an object. A list
whose items carry a name is better addressed by that name than by position, which someone else may change:
`("spec", "template", "roles", Item("name", "decode"), "replicas")` names the `replicas` of the role called
decode wherever it stands in the list. Reading a path that is not there answers None; removing one that is not
there does nothing; writing one makes the objects on the way, never list items (a list item that is not there
is an error: which item to make, and where, is the caller's business).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Item:
    """The first item of a list that is an object whose `key` field holds `value`."""

    key: str
    value: str

    def index_in(self, items: list[Any]) -> int | None:
        for index, item in enumerate(items):
            if isinstance(item, dict) and item.get(self.key) == self.value:
                return index
        return None

    def __str__(self) -> str:
        return f"[{self.key}={self.value}]"


PathPart = str | int | Item
Path = tuple[PathPart, ...]


class PathError(LookupError):
    """A path that cannot be written: a list item it names is not there, or a step is of another type."""


def _step(node: Any, part: PathPart) -> Any:
    if isinstance(part, str):
        return node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, list):
        return None
    index = part.index_in(node) if isinstance(part, Item) else part
    return node[index] if index is not None and 0 <= index < len(node) else None


def get_path(obj: Any, path: Sequence[PathPart]) -> Any:
    """The value at `path`, or None where any step is missing or of another type."""
    node = obj
    for part in path:
        node = _step(node, part)
    return node


def resolve(obj: Any, path: Sequence[PathPart]) -> tuple[str | int, ...] | None:
    """`path` with each keyed item replaced by its index in `obj` (as managedFields walks name them), or None
    when an item it names is not there."""
    resolved: list[str | int] = []
    node = obj
    for part in path:
        if isinstance(part, Item):
            index = part.index_in(node) if isinstance(node, list) else None
            if index is None:
                return None
            resolved.append(index)
        else:
            resolved.append(part)
        node = _step(node, part)
    return tuple(resolved)


def in_list(path: Sequence[PathPart]) -> bool:
    """Whether `path` goes through a list item."""
    return any(not isinstance(part, str) for part in path)


def set_path(obj: dict[str, Any], path: Sequence[PathPart], value: Any) -> None:
    """Set the value at `path`, making the objects on the way; raise PathError when a list item it names is
    not there or a step is not an object or list as the path says."""
    if not path:
        raise PathError("an empty path names no field")
    node: Any = obj
    for depth, part in enumerate(path[:-1]):
        if isinstance(part, str):
            if not isinstance(node, dict):
                raise PathError(f"{_text(path[:depth])} is not an object")
            following = path[depth + 1]
            node = node.setdefault(part, {} if isinstance(following, str) else [])
        else:
            found = _step(node, part)
            if not isinstance(found, dict | list):
                raise PathError(f"{_text(path[: depth + 1])} is not there")
            node = found
    last = path[-1]
    if isinstance(last, str):
        if not isinstance(node, dict):
            raise PathError(f"{_text(path[:-1])} is not an object")
        node[last] = value
        return
    index = last.index_in(node) if isinstance(last, Item) and isinstance(node, list) else last
    if not isinstance(node, list) or not isinstance(index, int) or not 0 <= index < len(node):
        raise PathError(f"{_text(path)} is not there")
    node[index] = value


def _text(path: Sequence[PathPart]) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(part, Item):
            text += str(part)
        else:
            text += f".{part}" if text else part
    return text or "the object"


def describe(path: Sequence[PathPart]) -> str:
    """`spec.template.roles[name=decode].replicas`, for messages."""
    return _text(path)


def without_paths(obj: dict[str, Any], paths: Iterable[Sequence[PathPart]]) -> dict[str, Any]:
    """A copy of `obj` without the object fields at `paths` (`obj` is left alone; list items are never removed,
    so removing one path shifts no other)."""
    paths = [path for path in paths if path]
    if not paths:
        return dict(obj)
    result = copy.deepcopy(obj)
    for path in paths:
        node = get_path(result, path[:-1])
        last = path[-1]
        if isinstance(node, dict) and isinstance(last, str):
            node.pop(last, None)
    return result
