"""The mutating webhook's RFC 6902 patch: from the raw object to its defaulted form, in a stable order.

`jsonpatch.make_patch` walks dictionary keys through sets, so its op order changes with Python's hash seed
from one process to the next. The same request must give the same patch from every replica, so the ops
are put in path order. Defaulting only adds and replaces values, and the diff never emits an op inside a
subtree it adds or replaces whole, so any order of such ops gives the same result; for other ops (which
defaulting does not produce) the sorted patch is used only if applying it gives the same object.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import jsonpatch


def _path_key(op: Mapping[str, Any]) -> tuple[tuple[int, int, str], ...]:
    # Numeric tokens compare as numbers, so list appends stay in ascending index order.
    tokens = str(op["path"]).split("/")[1:]
    return tuple((0, int(token), "") if token.isdigit() else (1, 0, token) for token in tokens)


def make_patch(source: Mapping[str, Any], target: Mapping[str, Any]) -> list[dict[str, Any]]:
    """RFC 6902 ops turning `source` into `target`, in a deterministic order; `[]` when they are equal."""
    ops: list[dict[str, Any]] = jsonpatch.make_patch(source, target).patch
    ordered = sorted(ops, key=_path_key)
    if all(op["op"] in ("add", "replace") for op in ops):
        return ordered
    if jsonpatch.apply_patch(source, ordered) == target:
        return ordered
    return ops


def encode_patch(ops: list[dict[str, Any]]) -> str:
    """The `response.patch` field: base64 of the compact JSON array."""
    return base64.b64encode(json.dumps(ops, separators=(",", ":"), ensure_ascii=False).encode()).decode("ascii")
