"""The patch builder is deterministic across processes (hash seeds) and always correct."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from typing import Any

import jsonpatch
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from webhook.patch import encode_patch, make_patch

_SOURCE = {"spec": {"b": 1, "backends": [{"name": "x"}, {"name": "y"}]}}
_TARGET = {
    "spec": {
        "b": 2,
        "a": 1,
        "z": {"k": "v"},
        "m": None,
        "backends": [{"name": "x", "w": 100, "t": "s"}, {"name": "y", "w": 100, "t": "s"}, {"name": "n"}],
    }
}
_SCRIPT = (
    "import json, sys; from webhook.patch import make_patch; "
    "s, t = json.loads(sys.argv[1]), json.loads(sys.argv[2]); print(json.dumps(make_patch(s, t)))"
)


def _in_process(seed: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(_SOURCE), json.dumps(_TARGET)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ops: list[dict[str, Any]] = json.loads(out)
    return ops


def test_same_ops_in_the_same_order_whatever_the_hash_seed() -> None:
    runs = [_in_process(seed) for seed in ("1", "2", "3", "4")]
    assert all(run == runs[0] for run in runs)
    assert [op["path"] for op in runs[0]] == [
        "/spec/a",
        "/spec/b",
        "/spec/backends/0/t",
        "/spec/backends/0/w",
        "/spec/backends/1/t",
        "/spec/backends/1/w",
        "/spec/backends/2",
        "/spec/m",
        "/spec/z",
    ]


def test_patch_applies_to_the_target() -> None:
    assert jsonpatch.apply_patch(_SOURCE, make_patch(_SOURCE, _TARGET)) == _TARGET


def test_list_appends_stay_in_index_order() -> None:
    source: dict[str, Any] = {"l": [0]}
    target = {"l": [0, *range(1, 12)]}
    ops = make_patch(source, target)
    assert [op["path"] for op in ops] == [f"/l/{index}" for index in range(1, 12)]
    assert jsonpatch.apply_patch(source, ops) == target


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ({"a": {"x": 1}, "b": 2}, {"b": 2, "c": {"x": 1}}),  # a move
        ({"l": [1, 2, 3, 4]}, {"l": [1]}),  # removals from a list
        ({"a": 1, "b": 2}, {}),
    ],
)
def test_removals_and_moves_still_give_a_correct_patch(source: dict[str, Any], target: dict[str, Any]) -> None:
    assert jsonpatch.apply_patch(source, make_patch(source, target)) == target


def test_keys_that_look_like_numbers_but_are_not_ascii_digits_sort_fine() -> None:
    ops = make_patch({"x": {}}, {"x": {"²": 1, "2": 2, "10": 3}})
    assert [op["path"] for op in ops] == ["/x/2", "/x/10", "/x/²"]


def test_equal_objects_give_an_empty_patch_encoded_as_base64() -> None:
    assert make_patch(_SOURCE, json.loads(json.dumps(_SOURCE))) == []
    assert base64.b64decode(encode_patch([])) == b"[]"
    assert base64.b64decode(encode_patch([{"op": "add", "path": "/a", "value": "é"}])) == (
        '[{"op":"add","path":"/a","value":"é"}]'.encode()
    )


# No booleans or floats: jsonpatch compares list items with Python's ==, so it cannot turn [1] into [true]
# or [1.0]. Defaulting never changes a value's JSON type, so the webhook is not affected.
_json = st.recursive(
    st.none() | st.integers(-3, 3) | st.text(max_size=3),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None)
# jsonpatch's own list diff got these wrong (a wrong result, and ops that do not apply): found by this test.
@example(source={"": [None, None, {}]}, target={"": [None, [], {"": None}]})
@example(source={"": [None, None, []]}, target={":": None, "": [None, [], [None]]})
@given(
    source=st.dictionaries(st.text(max_size=3), _json, max_size=4),
    target=st.dictionaries(st.text(max_size=3), _json, max_size=4),
)
def test_any_pair_of_objects_round_trips(source: dict[str, Any], target: dict[str, Any]) -> None:
    patched = jsonpatch.apply_patch(source, make_patch(source, target))
    # Compared as JSON text: Python's == would let 1 stand for True or 1.0.
    assert json.dumps(patched, sort_keys=True) == json.dumps(target, sort_keys=True)


def test_bool_and_number_are_told_apart_in_objects() -> None:
    source = {"a": {"b": True}, "c": 1, "d": [1]}
    target = {"a": {"b": 1}, "c": 1.0, "d": [1]}
    patched = jsonpatch.apply_patch(source, make_patch(source, target))
    assert json.dumps(patched) == json.dumps(target)
