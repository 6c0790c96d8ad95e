"""How an object is made readable for the rules: the one wire form the client's models reject rewritten, and
an object whose backend shape leaves open how it is read made to choose one (docs/design/validation.md §8, §10).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from shared.api.modelbooster import ModelBooster
from shared.backend_shape import COUNT_FIELD, LIST_FIELD, REPLICA_FIELDS, SINGLE_FIELD, backend_objects
from shared.partial_decode import Repair, json_copy, stand_in_at
from shared.schema import structural_schema

# The fields whose presence says how an object is read (shared/backend_shape.py): a repair stands in for them
# rather than leave them out, and the object-level Required errors of the shape name them.
SHAPE_FIELDS: Final = frozenset(
    {f"spec.{SINGLE_FIELD}", f"spec.{LIST_FIELD}", *(f"spec.{SINGLE_FIELD}.{name}" for name in REPLICA_FIELDS)}
)
SHAPE_CHOICES: Final = {"spec": (SINGLE_FIELD, LIST_FIELD), f"spec.{SINGLE_FIELD}": REPLICA_FIELDS}


@functools.cache
def booster_schema() -> dict[str, Any]:
    """The ModelBooster's structural schema, which says how old and new values correlate (read-only)."""
    return structural_schema(ModelBooster)


def readable_shape(raw: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[Repair, ...]]:
    """A copy of an object whose shape leaves open how it is read (`shape_errors`), made to choose one: the
    list of backends when it names none (a stand-in), the single backend when it names both, and a single
    backend's replica form; with the repairs made, so that no rule's error about them is reported."""
    readable = json_copy(raw)
    spec = readable["spec"]
    schema = booster_schema()
    single, listed = spec.get(SINGLE_FIELD) is not None, spec.get(LIST_FIELD) is not None
    if not single and not listed:
        spec[LIST_FIELD] = stand_in_at(schema, ("spec", LIST_FIELD))
        return readable, (Repair(f"spec.{LIST_FIELD}", stand_in=True),)
    if single and listed:
        del spec[LIST_FIELD]
        return readable, (Repair(f"spec.{LIST_FIELD}", stand_in=False),)
    backend = spec[SINGLE_FIELD]
    given = {name for name in REPLICA_FIELDS if backend.get(name) is not None}
    path = f"spec.{SINGLE_FIELD}"
    # The internal form's replica range stands for any of the three fields: a repair of one is a repair of all.
    every = tuple(Repair(f"{path}.{name}", stand_in=True) for name in REPLICA_FIELDS)
    if COUNT_FIELD in given:  # a count and a range: read as the count
        for name in given - {COUNT_FIELD}:
            del backend[name]
    else:  # nothing, or half a range: the count, or the other half, stood in for
        missing = [COUNT_FIELD] if not given else [name for name in REPLICA_FIELDS[1:] if name not in given]
        for name in missing:
            backend[name] = stand_in_at(schema, ("spec", SINGLE_FIELD, name))
    return readable, every


def normalised(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object with the one wire form the `kubernetes` models reject although Kubernetes accepts it:
    a numeric `resourceFieldRef.divisor` (a quantity, which the client types as a string)."""
    if not _numeric_divisors(obj):
        # The common case: nothing to rewrite, so no copy (validation runs on every admission request).
        return obj if isinstance(obj, dict) else dict(obj)
    copy: dict[str, Any] = _deep_copy(obj)
    for selector in _numeric_divisors(copy):
        selector["divisor"] = str(selector["divisor"])
    return copy


def _numeric_divisors(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for backend in backend_objects(obj.get("spec")):
        env = backend.get("env")
        for entry in env if isinstance(env, list) else ():
            value_from = entry.get("valueFrom") if isinstance(entry, dict) else None
            if value_from is None:  # most entries hold a `value`
                continue
            selector = value_from.get("resourceFieldRef") if isinstance(value_from, dict) else None
            if not isinstance(selector, dict):
                continue
            divisor = selector.get("divisor")
            if isinstance(divisor, int) and not isinstance(divisor, bool):
                found.append(selector)
    return found


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _deep_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_deep_copy(item) for item in value]
    return value
