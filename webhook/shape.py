"""Bounds on the shape of an object, checked before defaulting or validation sees it.

Free-form fields (`config`, the declared-but-unsupported features) can nest without end, and a 3 MiB body
can hold a million tiny values. Past a few hundred levels pydantic answers with its own internals
("Recursion error" at `config.dict`) while defaulting still succeeds, so /mutate and /validate disagreed;
a million values cost pydantic seconds of CPU to refuse one by one. Both bounds are far above any real
ModelBooster (about 15 levels, a few thousand values with managedFields) and are checked by one
iterative walk, so any depth is safe to check.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from shared.errors import MAX_PATH_CHARS, ROOT_PATH, clip

MAX_OBJECT_DEPTH: Final = 100
MAX_OBJECT_VALUES: Final = 50_000
_SHOWN_KEY_CHARS: Final = 64


def surely_within_bounds(body: bytes | bytearray) -> bool:
    """True when the JSON text of a whole review cannot hold an object beyond either bound (cheap: no walk).

    Every nested level needs an opening bracket, and every value at least two bytes (itself and a comma).
    """
    return len(body) < 2 * MAX_OBJECT_VALUES and body.count(b"{") + body.count(b"[") <= MAX_OBJECT_DEPTH


def excess(obj: dict[str, Any]) -> str | None:
    """Why `obj` is beyond the bounds, naming where (for depth); None when it is within them."""
    values = 0
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(obj, 1)]
    while stack:
        container, depth = stack.pop()
        children = container.values() if isinstance(container, dict) else container
        values += len(children)
        if values > MAX_OBJECT_VALUES:
            return f"it holds more than {MAX_OBJECT_VALUES} values; a ModelBooster needs a few thousand at most"
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= MAX_OBJECT_DEPTH:
                    return f"{_path_beyond(obj)} is nested more than {MAX_OBJECT_DEPTH} levels deep"
                stack.append((child, depth + 1))
    return None


def _path_beyond(obj: dict[str, Any]) -> str:
    """The path of the first container nested deeper than the bound (depth first, like the JSON text)."""
    path: list[str] = []
    iterators: list[Iterator[tuple[str, Any]]] = [_entries(obj)]
    while iterators:
        entry = next(iterators[-1], None)
        if entry is None:
            iterators.pop()
            if path:
                path.pop()
            continue
        segment, child = entry
        if isinstance(child, (dict, list)):
            path.append(segment)
            if len(iterators) >= MAX_OBJECT_DEPTH:
                return clip("".join(path).removeprefix("."), MAX_PATH_CHARS)
            iterators.append(_entries(child))
    return ROOT_PATH  # not reached: called only once the walk found a container too deep


def _entries(container: dict[str, Any] | list[Any]) -> Iterator[tuple[str, Any]]:
    if isinstance(container, dict):
        return ((f".{clip(str(key), _SHOWN_KEY_CHARS)}", value) for key, value in container.items())
    return ((f"[{index}]", value) for index, value in enumerate(container))
