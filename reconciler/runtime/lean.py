"""Lean cache entries: plain dicts hold what event handlers and reconciles read all the time; the rest is packed.

An informer caches every object of its kind for as long as the process runs, and a decoded Kubernetes object
is large in Python: a ModelServing with its pod template takes ~27 KB as nested dicts and strings, of which the
code reading the cache on every event needs a few hundred bytes (names, labels, owner references, a status
condition). `lean_transform(keep)` returns an informer transform that keeps the fields listed in `keep` as
plain values and packs everything else into one compressed blob (~1.7 KB for that ModelServing). Nothing is
lost: `full_object(obj)` rebuilds the whole object when a reconcile really needs it (comparing a child with
its desired state), and costs ~0.1 ms.

The cache answers only for what it keeps. Reading a field that was packed away from a lean object (with
`[]`, `.get()` or `in`) raises `PackedFieldError` naming the field, instead of answering None as if the
field were absent: code that needs more than the transform keeps fails loudly in every test that runs it.

Strings in the kept part are interned: label keys, owner uids, condition reasons and the like repeat across
thousands of cached objects and are then held once.
"""

from __future__ import annotations

import marshal
import sys
import zlib
from collections.abc import Mapping
from typing import Any

from reconciler.runtime.informer import Transform

# Which fields stay plain: a key maps to None (keep the whole value) or to the fields to keep inside it.
Keep = Mapping[str, "Keep | None"]

# Strings longer than this are kept as they are: interning pays for values that repeat, and long ones rarely do.
_INTERN_MAX = 96


class PackedFieldError(KeyError):
    """A lean cached object was asked for a field its transform does not keep."""

    def __str__(self) -> str:
        return str(self.args[0])


class _Guarded(dict[str, Any]):
    """A kept mapping that refuses to answer for the fields that were packed away from it."""

    __slots__ = ("_kept",)

    def __init__(self, items: dict[str, Any], kept: Keep) -> None:
        super().__init__(items)
        self._kept = kept

    def _check(self, key: object) -> None:
        if key not in self._kept:
            raise PackedFieldError(
                f"{key!r} is not kept in the lean cache (kept: {', '.join(sorted(self._kept))}); "
                "read it from full_object(obj) or keep it in the informer's transform"
            )

    def __getitem__(self, key: str) -> Any:
        self._check(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._check(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._check(key)
        return super().__contains__(key)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self), self._kept))


class LeanObject(_Guarded):
    """A cached object: the kept fields as a mapping, the others packed (`full_object` joins them again)."""

    __slots__ = ("packed",)

    def __init__(self, items: dict[str, Any], kept: Keep, packed: bytes | None) -> None:
        super().__init__(items, kept)
        self.packed = packed

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self), self._kept, self.packed))


def _interned(value: Any) -> Any:
    """`value` with its dict keys and short string values interned (new containers, same content)."""
    if isinstance(value, str):
        return sys.intern(value) if len(value) <= _INTERN_MAX else value
    if isinstance(value, dict):
        return {sys.intern(key): _interned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_interned(item) for item in value]
    return value


def _split(obj: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the kept part, with nested kept mappings guarded; the rest, with the same nesting)."""
    kept: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in obj.items():
        if key not in keep:
            rest[key] = value
            continue
        inner = keep[key]
        if inner is None or not isinstance(value, dict):
            kept[sys.intern(key)] = _interned(value)
            continue
        kept_inner, rest_inner = _split(value, inner)
        kept[sys.intern(key)] = _Guarded(kept_inner, inner)
        if rest_inner:
            rest[key] = rest_inner
    return kept, rest


def lean(obj: dict[str, Any], keep: Keep) -> LeanObject:
    """`obj` as a lean cache entry (see module docstring)."""
    kept, rest = _split(obj, keep)
    # marshal, not JSON: the blob never leaves the process, and marshal is several times faster both ways.
    # Level 1 gets most of the size reduction for half the CPU of the default level.
    packed = zlib.compress(marshal.dumps(rest), 1) if rest else None
    return LeanObject(kept, keep, packed)


def lean_transform(keep: Keep) -> Transform:
    """An informer transform keeping `keep` plain and packing the rest (see module docstring)."""

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        return lean(obj, keep)

    return transform


def _joined(kept: dict[str, Any], rest: dict[str, Any]) -> dict[str, Any]:
    """Plain dicts again: the kept fields and the packed ones merged, level by level."""
    joined: dict[str, Any] = {}
    for key, value in dict.items(kept):
        if isinstance(value, _Guarded):
            inner = rest.get(key)
            joined[key] = _joined(value, inner if isinstance(inner, dict) else {})
        else:
            joined[key] = value
    for key, value in rest.items():
        if key not in joined:
            joined[key] = value
    return joined


def full_object(obj: dict[str, Any]) -> dict[str, Any]:
    """The whole object behind a cache entry (a plain object is returned as it is)."""
    if not isinstance(obj, LeanObject):
        return obj
    rest: dict[str, Any] = marshal.loads(zlib.decompress(obj.packed)) if obj.packed is not None else {}
    return _joined(obj, rest)
