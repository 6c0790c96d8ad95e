"""The mutating webhook's RFC 6902 patch: from the raw object to its defaulted form, in a stable order.

`jsonpatch.make_patch` walks dictionary keys through sets, so its op order changes with Python's hash seed
from one process to the next. The same request must give the same patch from every replica, so the ops
are put in path order. Defaulting only adds and replaces values, and the diff never emits an op inside a
subtree it adds or replaces whole, so any order of such ops gives the same result; for other ops (which
defaulting does not produce) a patch is used only once applying it has been checked to give the target.
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
    # isdigit() alone also accepts characters such as '²' that int() refuses; object keys can be anything.
    return tuple((0, int(token), "") if token.isascii() and token.isdigit() else (1, 0, token) for token in tokens)


def _same(a: Any, b: Any) -> bool:
    # `==` is fast but calls 1 and True (and 1 and 1.0) equal; JSON text tells them apart.
    return bool(a == b) and json.dumps(a) == json.dumps(b)


def _hollow(source: Any, target: Any) -> tuple[Any, Any]:
    """Both values with their identical parts taken out, every remaining part at its original path.

    jsonpatch compares leaves by serialising them one at a time, which makes diffing a large object
    that defaulting barely touched (managedFields, env, resources...) the slowest step of a mutation.
    Identical dict entries are dropped from both sides and identical list items replaced by the same
    placeholder on both sides (indices must not shift), so jsonpatch only walks what differs.
    """
    if isinstance(source, dict) and isinstance(target, dict):
        hollow_source: dict[str, Any] = {}
        hollow_target: dict[str, Any] = {}
        for key, value in source.items():
            if key not in target:
                hollow_source[key] = value
            elif not _same(value, target[key]):
                hollow_source[key], hollow_target[key] = _hollow(value, target[key])
        for key, value in target.items():
            if key not in source:
                hollow_target[key] = value
        return hollow_source, hollow_target
    if isinstance(source, list) and isinstance(target, list) and len(source) == len(target):
        pairs = [(None, None) if _same(a, b) else _hollow(a, b) for a, b in zip(source, target, strict=True)]
        return [a for a, _ in pairs], [b for _, b in pairs]
    return source, target


def make_patch(source: Mapping[str, Any], target: Mapping[str, Any]) -> list[dict[str, Any]]:
    """RFC 6902 ops turning `source` into `target`, in a deterministic order; `[]` when they are equal.

    Every patch is checked by applying it: jsonpatch's list diff can emit wrong ops (or ops that do not apply)
    for lists that mix nulls, lists and maps. When neither of its patches is right, the answer replaces each
    differing top-level field whole, which is always right.
    """
    hollow_source, hollow_target = _hollow(dict(source), dict(target))
    ops: list[dict[str, Any]] = jsonpatch.make_patch(hollow_source, hollow_target).patch
    ordered = sorted(ops, key=_path_key)
    for candidate in (ordered, ops):
        if _turns_into(source, candidate, target):
            return candidate
    full: list[dict[str, Any]] = jsonpatch.make_patch(source, target).patch
    if _turns_into(source, full, target):
        return full
    return _field_by_field(source, target)


def _turns_into(source: Mapping[str, Any], ops: list[dict[str, Any]], target: Mapping[str, Any]) -> bool:
    try:
        patched = jsonpatch.apply_patch(source, ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        return False
    # As JSON text, keys sorted: the order of keys means nothing, but `==` would let 1 stand for True or 1.0.
    return json.dumps(patched, sort_keys=True) == json.dumps(target, sort_keys=True)


def _field_by_field(source: Mapping[str, Any], target: Mapping[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for key in sorted(source.keys() | target.keys()):
        path = "/" + key.replace("~", "~0").replace("/", "~1")
        if key not in target:
            ops.append({"op": "remove", "path": path})
        elif key not in source:
            ops.append({"op": "add", "path": path, "value": target[key]})
        elif not _same(source[key], target[key]):
            ops.append({"op": "replace", "path": path, "value": target[key]})
    return ops


def encode_patch(ops: list[dict[str, Any]]) -> str:
    """The `response.patch` field: base64 of the compact JSON array."""
    return base64.b64encode(json.dumps(ops, separators=(",", ":"), ensure_ascii=False).encode()).decode("ascii")
