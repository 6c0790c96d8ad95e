"""The patch on the wire: base64 of compact JSON, non-ASCII kept as UTF-8 (the ops are tested in
tests/unit/test_default_ops.py)."""

from __future__ import annotations

import base64

from webhook.patch import encode_patch


def test_an_empty_patch_is_an_empty_array() -> None:
    assert base64.b64decode(encode_patch([])) == b"[]"


def test_ops_are_compact_utf8_json() -> None:
    assert base64.b64decode(encode_patch([{"op": "add", "path": "/a", "value": "é"}])) == (
        '[{"op":"add","path":"/a","value":"é"}]'.encode()
    )
