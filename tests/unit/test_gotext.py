"""shared/gotext.py: `go_quote` writes what Go's `strconv.Quote` writes (the expected texts are Go's own)."""

from __future__ import annotations

import pytest

from shared.gotext import go_parse_bool, go_quote


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("", '""'),
        ("30s", '"30s"'),
        ("a\nb", r'"a\nb"'),
        ("a\tb", r'"a\tb"'),
        ('say "hi"', r'"say \"hi\""'),
        ("C:\\models", r'"C:\\models"'),
        ("\a\b\f\n\r\t\v", r'"\a\b\f\n\r\t\v"'),
    ],
)
def test_escapes_like_go(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("\x00", r'"\x00"'),
        ("a\x1bb", r'"a\x1bb"'),
        ("\x7f", r'"\x7f"'),
        ("\u00a0", r'"\u00a0"'),  # a space other than ASCII's is not printable to Go
        ("\u2028", r'"\u2028"'),
        ("\U000e0001", r'"\U000e0001"'),
    ],
)
def test_non_printable_runes_as_hex_escapes(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


def test_printable_non_ascii_is_kept() -> None:
    assert go_quote("1µs") == '"1µs"'
    assert go_quote("Grüße, 日本") == '"Grüße, 日本"'
    assert go_quote("é\n") == r'"é\n"'


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("1", True), ("t", True), ("T", True), ("TRUE", True), ("true", True), ("True", True),
     ("0", False), ("f", False), ("F", False), ("FALSE", False), ("false", False), ("False", False),
     ("yes", None), ("on", None), ("tRUE", None), (" true", None), ("", None)],
)  # fmt: skip
def test_booleans_are_what_strconv_parsebool_accepts(text: str, parsed: bool | None) -> None:
    assert go_parse_bool(text) is parsed
