"""The webhook's JSON parser and encoder give what the `json` module gives, whichever parser answered."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from process.jsontext import MalformedJson, encode_json, parse_json

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)
# Number literals as a client may write them, beyond what json.dumps produces.
NUMBER_TEXT = st.from_regex(r"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?\Z")
# String literals with every escape JSON has, lone surrogates included (as \u escapes: a raw surrogate is not
# UTF-8, so no client can send one).
ESCAPE = st.sampled_from(['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]) | st.integers(0, 0xFFFF).map(
    lambda code: f"\\u{code:04x}"
)
RAW = st.characters(exclude_characters='"\\', min_codepoint=0x20, exclude_categories=("Cs",))
STRING_TEXT = st.lists(ESCAPE | RAW, max_size=12).map(lambda parts: '"' + "".join(parts) + '"')


def _typed(value: Any) -> Any:
    """The value with every number tagged by its type, and floats by their exact bits (-0.0 is not 0.0)."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, float):
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    return (type(value).__name__, value)


def _same_as_json_module(text: bytes) -> None:
    assert _typed(parse_json(text)) == _typed(json.loads(text))


@settings(max_examples=300)
@given(JSON_VALUES)
def test_any_json_document_parses_as_the_json_module_parses_it(value: Any) -> None:
    _same_as_json_module(json.dumps(value).encode())
    _same_as_json_module(json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass"))


@settings(max_examples=300)
@given(NUMBER_TEXT)
def test_number_literals_parse_to_the_same_type_and_value(text: str) -> None:
    _same_as_json_module(f'{{"n": {text}, "list": [{text}]}}'.encode())


@settings(max_examples=300)
@given(STRING_TEXT)
def test_string_literals_parse_to_the_same_text(text: str) -> None:
    _same_as_json_module(f'{{{text}: {text}}}'.encode())


def test_duplicate_keys_keep_the_last_value_at_the_first_place() -> None:
    assert list(parse_json(b'{"a": 1, "b": 2, "a": 3}').items()) == [("a", 3), ("b", 2)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text",
    [
        b'"\\ud800"',  # a lone surrogate: valid JSON text, refused by the fast parser
        b'\xef\xbb\xbf{"a": 1}',  # a UTF-8 byte order mark, which the json module skips
        b"[" * 300 + b"]" * 300,  # deeper than the fast parser goes (about 200), not than Python's
        b"1e400",  # beyond a double: infinity, as float() says
    ],
)
def test_what_only_the_json_module_accepts_is_still_accepted(text: bytes) -> None:
    _same_as_json_module(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b'{"a": NaN}', "NaN is not valid JSON"),
        (b"[-Infinity]", "-Infinity is not valid JSON"),
        (b"[1,]", "Expecting value: line 1 column 4 (char 3)"),
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    ],
)
def test_malformed_text_is_refused_with_the_json_module_reason(text: bytes, reason: str) -> None:
    with pytest.raises(MalformedJson) as refused:
        parse_json(text)
    assert str(refused.value) == reason


@settings(max_examples=300)
@given(JSON_VALUES)  # st.text() draws no surrogates
def test_answers_encode_as_compact_utf8_json(value: Any) -> None:
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    encoded = encode_json(value)
    assert _typed(json.loads(encoded)) == _typed(json.loads(expected))
    if not any(isinstance(leaf, float) for leaf in _leaves(value)):
        assert encoded == expected  # byte for byte (floats may be spelt differently, 1e16 or 1e+16)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def test_a_lone_surrogate_is_escaped_into_valid_json() -> None:
    message = {"message": 'Invalid value: "\ud800 x"', "ok": "é"}
    encoded = encode_json(message)
    assert json.loads(encoded) == message
    encoded.decode("utf-8")  # strict: no surrogate reached the bytes
