"""Update ratcheting: on UPDATE, refuse only what the request changes (kube-apiserver's validation ratcheting).

An object stored before a rule existed (say, a ModelBooster that Kthena v0.1.0 accepted with a backend
`autoscalingPolicy.behavior`) must stay manageable: relabelled, finalized, edited elsewhere, fixed. So a
field error of the new object is *carried over*, and not refused, when every value the rule read to find
it is the same in the old object: the value at the error's path, or the values named by `FieldError.reads`
for a rule that compares several fields (`minReplicas` against `maxReplicas`).

Finding "the same value in the old object" follows the schema the way kube-apiserver correlates values:
objects by field name, lists declared `x-kubernetes-list-type: map` by their keys (backends by `name`, so
reordering backends changes nothing), and every other list as a whole, since its items have no identity
(a worker is compared by comparing the backend's whole `workers` list).

`same_json` repeats `reconciler.runtime.objects.json_equal`: shared keeps its own, as the layering forbids importing the
reconciler runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from shared.errors import ROOT_PATH, FieldError
from shared.fieldpath import BadFieldPath, Step, parse
from shared.unsupported import UNSUPPORTED_DETAILS

_ABSENT: Final = object()

# What kube-apiserver passes on unchanged: each warning at most 256 characters, and all of a response's
# warnings well under its 4096-character total (past it, it truncates every warning of the request).
MAX_WARNING_CHARS: Final = 256
MAX_FIELD_WARNINGS: Final = 10


@dataclass(frozen=True)
class Ratcheted:
    """The errors an UPDATE is refused for, and those carried over unchanged from the stored object."""

    errors: list[FieldError] = field(default_factory=list)
    carried: list[FieldError] = field(default_factory=list)


def ratchet(errors: Sequence[FieldError], *, new: Mapping[str, Any], old: Mapping[str, Any],
            schema: Mapping[str, Any]) -> Ratcheted:  # fmt: skip
    """Split `errors` (found on `new`) into those the update causes and those carried over from `old`."""
    result = Ratcheted()
    # Many errors compare the same value (every error inside one `workers` list compares that whole list):
    # each value is compared once, so the work stays linear in the size of the object.
    compared: dict[tuple[Step, ...], bool] = {}
    for error in errors:
        paths = error.reads or (error.path,)
        carried = all(_unchanged(path, new=new, old=old, schema=schema, compared=compared) for path in paths)
        (result.carried if carried else result.errors).append(error)
    return result


def same_json(a: object, b: object) -> bool:
    """JSON equality: like `==`, except that `true` is not `1` (Python's bool is an int)."""
    # `==` (in C) settles the common case, a difference, at once; only equal values are walked again.
    return a == b and _strictly_same(a, b)


def _strictly_same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_strictly_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_strictly_same(x, y) for x, y in zip(a, b, strict=True))
    return not isinstance(b, (dict, list)) and a == b


def _unchanged(path: str, *, new: Mapping[str, Any], old: Mapping[str, Any], schema: Mapping[str, Any],
               compared: dict[tuple[Step, ...], bool]) -> bool:  # fmt: skip
    if path == ROOT_PATH:
        return False  # the whole object: not a value that can be carried over
    try:
        steps = parse(path)
    except BadFieldPath:
        return False  # a path we cannot follow cannot be shown unchanged
    new_value, old_value, schema, location = _correlated(steps, new=new, old=old, schema=schema)
    if location not in compared:
        compared[location] = _same_value(new_value, old_value, schema)
    return compared[location]


def _same_value(new: object, old: object, schema: Mapping[str, Any]) -> bool:
    if new is _ABSENT or old is _ABSENT:
        return new is old
    keys = _map_keys(schema)
    if keys and isinstance(new, list) and isinstance(old, list):
        return _same_list_map(new, old, keys)
    return same_json(new, old)


def _same_list_map(new: list[Any], old: list[Any], keys: Sequence[str]) -> bool:
    """A list-map compared as the API server does: the same items by key, in any order."""
    new_items = {repr(_key_of(item, keys)): item for item in new}
    old_items = {repr(_key_of(item, keys)): item for item in old}
    if len(new_items) != len(new) or len(old_items) != len(old):
        return same_json(new, old)  # duplicate keys: no identity after all, compare in order
    return new_items.keys() == old_items.keys() and all(same_json(new_items[k], old_items[k]) for k in new_items)


def _map_keys(schema: Mapping[str, Any]) -> Sequence[str] | None:
    if schema.get("x-kubernetes-list-type") != "map":
        return None
    keys = schema.get("x-kubernetes-list-map-keys")
    return keys if isinstance(keys, list) and keys else None


def _correlated(steps: Sequence[Step], *, new: object, old: object,
                schema: Mapping[str, Any]) -> tuple[Any, Any, Mapping[str, Any], tuple[Step, ...]]:  # fmt: skip
    """The values at `steps` in the new object and, correlated by the schema, in the old one; their schema;
    and the steps that lead to them (fewer than `steps` when an atomic list stops the walk)."""
    walked: list[Step] = []
    for step in steps:
        if isinstance(step, int):
            keys = _map_keys(schema)
            if not keys:
                break  # an atomic list: its items have no identity, so the list is compared whole
            new = _item(new, step)
            old = _keyed_item(old, _key_of(new, keys), keys)
            schema = schema.get("items") or {}
        else:
            new, old = _field(new, step), _field(old, step)
            properties = schema.get("properties") or {}
            extra = schema.get("additionalProperties")
            schema = properties.get(step) or (extra if isinstance(extra, dict) else {})
        walked.append(step)
    return new, old, schema, tuple(walked)


def _field(value: object, name: str) -> object:
    # An explicit JSON null is absent, as the API server prunes it.
    found = value.get(name) if isinstance(value, dict) else None
    return _ABSENT if found is None else found


def _item(value: object, index: int) -> object:
    return value[index] if isinstance(value, list) and 0 <= index < len(value) else _ABSENT


def _key_of(item: object, keys: Sequence[str]) -> tuple[object, ...] | None:
    if not isinstance(item, dict):
        return None
    return tuple(item.get(key) for key in keys)


def _keyed_item(items: object, key: tuple[object, ...] | None, keys: Sequence[str]) -> object:
    if key is None or not isinstance(items, list):
        return _ABSENT
    for item in items:
        if _key_of(item, keys) == key:
            return item
    return _ABSENT


# ---------------------------------------------------------------------------------------------------------
# What the user is told about carried-over errors (admission warnings)


def carried_warnings(carried: Sequence[FieldError]) -> list[str]:
    """One short warning per carried-over error, at most MAX_FIELD_WARNINGS of them, then what follows."""
    if not carried:
        return []
    warnings = [_one_line(_warning(error)) for error in carried[:MAX_FIELD_WARNINGS]]
    if len(carried) > MAX_FIELD_WARNINGS:
        warnings.append(f"and {len(carried) - MAX_FIELD_WARNINGS} more fields carried over unchanged")
    warnings.append(
        "fields carried over unchanged are not refused; the reconciler leaves this ModelBooster Failed, "
        "and its children untouched, until they are removed or fixed"
    )
    return warnings


def is_unsupported(error: FieldError) -> bool:
    """Whether the error refuses a declared-but-unsupported feature (rather than a bad value)."""
    return error.type == "Forbidden" and error.detail in UNSUPPORTED_DETAILS


def _warning(error: FieldError) -> str:
    # Not "ignored": the field is kept, and the object is not reconciled while it holds it (the last warning).
    return f"unchanged, so admitted: {error.render()}"


def _one_line(text: str) -> str:
    """Printable, one line, bounded: kube-apiserver drops a warning with control characters."""
    line = "".join(char if char.isprintable() else " " for char in text)
    if len(line) > MAX_WARNING_CHARS:
        line = line[: MAX_WARNING_CHARS - 1] + "…"
    return line
