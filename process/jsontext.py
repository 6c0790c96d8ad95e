"""JSON text in and out of our processes, in native code: the webhook's request bodies and answers, the
reconciler's requests, answers and watch events.

Every admission request pays for parsing its body and encoding its answer, and the reconciler for every write
and every watch event, so both go through pydantic-core's parser and serializer (Rust), which take about half
the time of the `json` module (a ModelServing encodes in a third of `json.dumps`'s time).
The `json` module stays the reference: whenever the fast parser refuses a text, the text is parsed
again by `json.loads`, which either accepts it (lone surrogate escapes, a UTF-8 byte order mark,
nesting between the fast parser's depth limit and Python's) or gives the error message clients see.
Where both accept a text they give the same value (tests/webhook/test_jsontext.py), so which parser
answered is never visible.
"""

from __future__ import annotations

import json

from pydantic_core import PydanticSerializationError, from_json, to_json


class MalformedJson(ValueError):
    """The body is not JSON; the message is the reason, for a one-line 400."""


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes | bytearray) -> object:
    """The value of a JSON text; raises MalformedJson (NaN and Infinity are not JSON)."""
    try:
        return from_json(body, allow_inf_nan=False)
    except ValueError:
        pass  # refused: the reference parser decides, and words the error
    try:
        parsed: object = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise MalformedJson("nested too deeply" if isinstance(error, RecursionError) else str(error)) from None
    return parsed


def encode_json(value: object) -> bytes:
    """Compact UTF-8 JSON of a value made of dicts, lists, strings, numbers, booleans and None."""
    try:
        return to_json(value)
    except PydanticSerializationError:
        # A lone surrogate (a `\\ud800` escape in the object, quoted back in a denial) has no UTF-8 form:
        # escaped as `\\ud800`, it stays valid JSON text.
        return json.dumps(value, separators=(",", ":")).encode("ascii")
