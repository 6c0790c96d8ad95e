"""What of an object that does not decode can still be checked, so that one answer holds every error
(docs/design/validation.md §10): the object is repaired on a copy until it decodes (a value left out, or a
stand-in, at most `ROUNDS` times), and a rule's error is reported only if all it read was the user's own. Paid
only by objects that do not decode, and not at all past `MAX_REPAIRED` failures (a hostile object).
"""

from __future__ import annotations

import copy
import marshal
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from shared.decoding import decode_details
from shared.errors import ROOT_PATH, FieldError
from shared.schema import structural_schema

M = TypeVar("M", bound=BaseModel)

ROUNDS: Final = 3
MAX_REPAIRED: Final = 100
# Strings tried, in order, as the stand-in of a required string: the first its pattern and bounds admit.
_STAND_IN_TEXTS: Final = ("stand-in", "hf://stand-in", "pvc://stand-in", "hostpath://stand-in", "0", "30s")


@dataclass(frozen=True)
class Repair:
    """A value of the user's object replaced (`stand_in`) or left out, at a field path as errors print it."""

    path: str
    stand_in: bool


@dataclass(frozen=True)
class Partial:
    """The model of the repaired object (None when no repair made it decode), the repaired object, and what was
    repaired."""

    model: Any
    obj: dict[str, Any]
    repairs: tuple[Repair, ...]


def decode_partially(
    model: type[M],
    obj: Mapping[str, Any],
    details: Sequence[ErrorDetails],
    *,
    kept: Collection[str] = (),
    rounds: int = ROUNDS,
) -> Partial:
    """Repair a copy of `obj`, which fails to decode with `details`, until it decodes (see the module docstring).
    A field at a path in `kept` is stood in for rather than left out: its presence decides how the rest reads."""
    repaired = json_copy(obj)
    if len(details) > MAX_REPAIRED:
        return Partial(None, repaired, ())
    schema = structural_schema(model)
    repairs: list[Repair] = []
    failures: Sequence[ErrorDetails] = details
    for round_ in range(rounds):
        for failure in failures:
            repair = _repair(repaired, failure, schema=schema, escalate=round_ > 0, kept=kept)
            if repair is None:
                return Partial(None, repaired, tuple(repairs))
            if repair is not _COVERED:
                repairs.append(repair)
        typed, failures = decode_details(model, repaired)
        if typed is not None:
            return Partial(typed, repaired, tuple(repairs))
    return Partial(None, repaired, tuple(repairs))


def json_copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object: in C (`marshal`) for what JSON and YAML decode to, `copy` for anything else.
    An object at the webhook's bound (50,000 values) is copied in a few milliseconds instead of thirty."""
    try:
        copied: dict[str, Any] = marshal.loads(marshal.dumps(dict(obj)))
    except ValueError:  # a value marshal does not know (not from JSON or YAML)
        copied = copy.deepcopy(dict(obj))
    return copied


class Trust:
    """Which rule errors are about the user's own values, given the repairs made (see the module docstring).

    Built once per object: each path an error read is then judged by its own ancestors (a few set lookups), so
    a thousand errors against a hundred repairs cost thousands of lookups, not a hundred thousand comparisons.
    """

    def __init__(self, repairs: Sequence[Repair]) -> None:
        self._everything = any(repair.path == ROOT_PATH for repair in repairs)
        self._repaired = frozenset(repair.path for repair in repairs)
        # Every path that is, or holds, a stand-in.
        self._holding = frozenset(
            outer for repair in repairs if repair.stand_in for outer in _ancestors_and_self(repair.path)
        )

    def trusts(self, error: FieldError) -> bool:
        if self._everything:
            return False
        for path in (error.path, *error.reads):
            if path in self._holding:
                return False
            if not self._repaired.isdisjoint(_ancestors_and_self(path)):
                return False
        return True


def trusted(error: FieldError, repairs: Sequence[Repair]) -> bool:
    """Whether a rule's error is about the user's own values (one error; `Trust` for many)."""
    return Trust(repairs).trusts(error)


def _ancestors_and_self(path: str) -> list[str]:
    """`a.b[0].c` -> `a`, `a.b`, `a.b[0]`, `a.b[0].c` (a dot inside a map key's brackets is no boundary)."""
    found = []
    depth = 0
    for position, char in enumerate(path):
        if char == "[":
            if depth == 0 and position:
                found.append(path[:position])
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif char == "." and depth == 0 and position:
            found.append(path[:position])
    found.append(path)
    return found


# ---------------------------------------------------------------------------------------------------------
# Walking a raw object along a pydantic location, as decoding.render_location walks the schema


@dataclass(frozen=True)
class _Hop:
    holder: dict[str, Any] | list[Any]  # the object or list the step is taken in
    key: str | int
    node: Mapping[str, Any]  # the schema of the value at the step
    parent: Mapping[str, Any]  # the schema of `holder`
    path: str
    removable: bool  # an undeclared field, a map entry or an optional field: the schema lets it be absent


def _hops(obj: dict[str, Any], loc: Sequence[int | str], schema: Mapping[str, Any]) -> list[_Hop] | None:
    """Each step of `loc` in `obj` (union tags skipped), or None when the object does not lead there."""
    hops: list[_Hop] = []
    value: Any = obj
    node: Mapping[str, Any] = schema
    path = ""
    for position, segment in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(segment, int):
            if node.get("type") != "array":
                continue
            if not isinstance(value, list) or not 0 <= segment < len(value):
                return None
            child = node.get("items", {})
            path += f"[{segment}]"
            hops.append(_Hop(value, segment, child, node, path, removable=False))
            value, node = value[segment], child
            continue
        properties = node.get("properties", {})
        extra = node.get("additionalProperties")
        if segment in properties:
            child, removable = properties[segment], segment not in node.get("required", ())
            path += f".{segment}" if path else segment
        elif isinstance(extra, Mapping):
            child, removable = extra, True
            path += f"[{segment}]"
        elif node.get("type") == "object" and (last or node.get("x-kubernetes-preserve-unknown-fields")):
            child, removable = {}, True
            path += f".{segment}" if path else segment
        else:
            continue  # the tag of a union member
        if not isinstance(value, dict):
            return None
        hops.append(_Hop(value, segment, child, node, path, removable=removable))
        value, node = value.get(segment), child
    return hops


def _repair(
    obj: dict[str, Any], failure: ErrorDetails, *, schema: Mapping[str, Any], escalate: bool, kept: Collection[str]
) -> Repair | None:
    """Repair one failure in place: the repair made (`_COVERED` when an earlier repair took its place away), or
    None when none can be made."""
    hops = _hops(obj, failure["loc"], schema)
    if hops is None:
        return _COVERED  # an earlier repair replaced or removed what held it
    if not hops:
        return None  # the object as a whole
    last = hops[-1]
    # A value that must be there gets a stand-in; an undeclared field, and anything once a stand-in failed, goes.
    needed = failure["type"] == "missing" or not last.removable or last.path in kept
    if needed and not escalate and failure["type"] != "extra_forbidden":
        stand_in = _stand_in(last.node)
        if stand_in is not _NONE:
            _put(last, stand_in)
            return Repair(last.path, stand_in=True)
    for hop in reversed(hops):
        if hop.removable and hop.path not in kept:
            _remove(hop)
            return Repair(hop.path, stand_in=False)
    return None


def _put(hop: _Hop, value: object) -> None:
    if isinstance(hop.holder, list):
        hop.holder[int(hop.key)] = value
    else:
        hop.holder[str(hop.key)] = value


def _remove(hop: _Hop) -> None:
    if isinstance(hop.holder, dict):
        hop.holder.pop(str(hop.key), None)


_NONE: Final = object()
_COVERED: Final = Repair("", stand_in=False)


def stand_in_at(schema: Mapping[str, Any], steps: Sequence[str]) -> object:
    """The stand-in of the field at `steps` (property names) of `schema`."""
    node = schema
    for step in steps:
        node = node.get("properties", {}).get(step, {})
    if node.get("type") == "array" and not node.get("minItems"):
        return [_stand_in(node.get("items", {}))]
    return _stand_in(node)


def _stand_in(node: Mapping[str, Any]) -> object:
    """The simplest value the schema node admits, or _NONE when this cannot tell one."""
    if "default" in node:
        return copy.deepcopy(node["default"])
    if node.get("enum"):
        return node["enum"][0]
    if node.get("x-kubernetes-int-or-string"):
        return 0
    kind = node.get("type")
    if not kind and node.get("x-kubernetes-preserve-unknown-fields"):
        return {}
    if kind == "object":
        properties = node.get("properties", {})
        made = {name: _stand_in(properties.get(name, {})) for name in node.get("required", ())}
        return _NONE if _NONE in made.values() else made
    if kind == "array":
        item = _stand_in(node.get("items", {}))
        count = int(node.get("minItems", 0))
        return _NONE if item is _NONE and count else [copy.deepcopy(item) for _ in range(count)]
    if kind in ("integer", "number"):
        low = node.get("minimum", 0) + (1 if node.get("exclusiveMinimum") else 0)
        high = node.get("maximum")
        return max(low, 0) if high is None else min(max(low, 0), high)
    if kind == "boolean":
        return False
    if kind == "string" or not kind:
        return next((text for text in _STAND_IN_TEXTS if _admits(node, text)), _NONE)
    return _NONE


def _admits(node: Mapping[str, Any], text: str) -> bool:
    if not node.get("minLength", 0) <= len(text) <= node.get("maxLength", len(text)):
        return False
    pattern = node.get("pattern")
    return pattern is None or re.search(pattern, text) is not None
