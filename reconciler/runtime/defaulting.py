"""What kube-apiserver stores for an object, as far as a CRD's structural defaults go (apiextensions-apiserver's
defaulting): every property the schema gives a `default` and the object leaves out is filled in, recursively
through `properties`, `items` and `additionalProperties`, defaults inside a filled-in default included.

A controller that records a digest of what it wrote needs the digest of what the server will store, or it
finds its own write changed on the next read. Mutating webhooks can change more; what this cannot foresee the
caller learns from the stored object the write returns.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

# Hostile or absurd input: nothing deeper than this is defaulted.
MAX_DEPTH: Final = 64


def with_defaults(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """A copy of `value` with the schema's defaults filled in where it leaves a property out."""
    return _fill(copy.deepcopy(value), schema, 0)


def _fill(value: Any, schema: Mapping[str, Any] | None, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, sub in properties.items():
                if key not in value and isinstance(sub, Mapping) and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
            for key, sub in properties.items():
                if key in value:
                    value[key] = _fill(value[key], sub, depth + 1)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            declared = properties if isinstance(properties, Mapping) else {}
            for key in [key for key in value if key not in declared]:
                value[key] = _fill(value[key], extra, depth + 1)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_fill(item, items, depth + 1) for item in value]
    return value
