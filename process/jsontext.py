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
from collections.abc import Callable
from typing import Any, Final

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


_WHITESPACE: Final = frozenset(" \t\n\r")


def parse_list(body: bytes | bytearray, each: Callable[[Any], Any]) -> dict[str, Any]:
    """A JSON object (a list page) whose `items` are decoded one at a time, each replaced by what `each` returns
    before the next is decoded: a page of large objects is never held whole in decoded form, only its text.
    Other members are decoded as usual; duplicate names keep the last value, as `parse_json`. Raises
    MalformedJson. The `json` module's scanner decodes each value (pydantic-core cannot start mid-text)."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise MalformedJson(str(error)) from None
    cursor = _Cursor(text)
    result: dict[str, Any] = {}
    try:
        cursor.expect("{")
        if not cursor.take("}"):
            while True:
                key = cursor.value()
                if not isinstance(key, str):
                    raise MalformedJson(f"expected a member name before character {cursor.at}")
                cursor.expect(":")
                if key == "items" and cursor.take("["):
                    result[key] = cursor.items(each)
                else:
                    result[key] = cursor.value()
                if not cursor.take(","):
                    cursor.expect("}")
                    break
        cursor.end()
    except RecursionError:
        raise MalformedJson("nested too deeply") from None
    except MalformedJson:
        raise
    except ValueError as error:
        raise MalformedJson(str(error)) from None
    return result


class _Cursor:
    """A position in a JSON text, stepping over whitespace and punctuation, decoding one value at a time."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self._decoder = json.JSONDecoder(parse_constant=_reject_constant)

    def _skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in _WHITESPACE:
            self.at += 1

    def take(self, char: str) -> bool:
        self._skip()
        if self.at < len(self.text) and self.text[self.at] == char:
            self.at += 1
            return True
        return False

    def expect(self, char: str) -> None:
        if not self.take(char):
            raise MalformedJson(f"expected {char!r} at character {self.at}")

    def value(self) -> Any:
        self._skip()
        decoded, self.at = self._decoder.raw_decode(self.text, self.at)
        return decoded

    def items(self, each: Callable[[Any], Any]) -> list[Any]:
        """The rest of an array whose `[` was taken, each element through `each`."""
        kept: list[Any] = []
        if self.take("]"):
            return kept
        while True:
            kept.append(each(self.value()))
            if not self.take(","):
                self.expect("]")
                return kept

    def end(self) -> None:
        self._skip()
        if self.at != len(self.text):
            raise MalformedJson(f"extra data at character {self.at}")
