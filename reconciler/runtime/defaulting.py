"""What kube-apiserver stores for an object, as far as a CRD's structural defaults go (apiextensions-apiserver's
defaulting): every property the schema gives a `default` and the object leaves out is filled in, recursively
through `properties`, `items` and `additionalProperties`, defaults inside a filled-in default included.

A controller that records a digest of what it wrote needs the digest of what the server will store, or it
finds its own write changed on the next read. Mutating webhooks can change more; what this cannot foresee the
caller learns from the stored object the write returns.

The result is built anew along the object's maps and lists (its scalars are shared; nothing is copied deeply),
and which properties of a schema node carry a default is worked out once per node: a reconcile runs this for
every ModelServing it writes, against a schema of thousands of nodes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

# Hostile or absurd input: nothing deeper than this is defaulted.
MAX_DEPTH: Final = 64
_MEMO_MAX: Final = 100_000

# id(schema node) -> (the node, kept alive so that its id is not reused; its defaulted properties).
_defaulted: dict[int, tuple[Mapping[str, Any], tuple[tuple[str, Any], ...]]] = {}


def with_defaults(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """`value` with the schema's defaults filled in where it leaves a property out (`value` is not changed)."""
    return _fill(value, schema, 0)


def _defaults_of(schema: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    known = _defaulted.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    properties = schema.get("properties")
    found = tuple(
        (key, sub["default"])
        for key, sub in (properties.items() if isinstance(properties, Mapping) else ())
        if isinstance(sub, Mapping) and "default" in sub
    )
    if len(_defaulted) >= _MEMO_MAX:
        _defaulted.clear()
    _defaulted[id(schema)] = (schema, found)
    return found


def _fill(value: Any, schema: Any, depth: int) -> Any:
    # Exact types: decoded JSON is made of plain dicts, lists and scalars, and the ABC checks cost several times
    # more on the thousands of nodes a pod template has.
    kind = type(value)
    if kind is dict:
        if type(schema) is not dict or depth > MAX_DEPTH:
            return value
        properties = schema.get("properties")
        declared = properties if type(properties) is dict else {}
        extra = schema.get("additionalProperties")
        extra = extra if type(extra) is dict else None
        filled = {}
        for key, item in value.items():
            sub = declared.get(key, extra)
            filled[key] = _fill(item, sub, depth + 1) if sub is not None else item
        for key, default in _defaults_of(schema):
            if key not in filled:
                filled[key] = _fill(copy.deepcopy(default), declared.get(key), depth + 1)
        return filled
    if kind is list and type(schema) is dict and depth <= MAX_DEPTH:
        items = schema.get("items")
        if type(items) is dict and ("properties" in items or "items" in items or "additionalProperties" in items):
            return [_fill(item, items, depth + 1) for item in value]
    return value
