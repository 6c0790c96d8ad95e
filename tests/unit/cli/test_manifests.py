"""modelbooster/manifests.py: reading a file or stdin, and one-line errors for unusable input.

How YAML itself is read (Kubernetes' way, within bounds) is tested in test_yaml_loader.py.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from modelbooster.manifests import ManifestError, check_modelbooster_identity, load_documents
from modelbooster.yaml_loader import ReadLimits


def load(data: str | bytes, *, limits: ReadLimits | None = None) -> list[dict[str, object]]:
    raw = data.encode() if isinstance(data, str) else data
    if limits is None:
        return load_documents("-", stdin=io.BytesIO(raw))
    return load_documents("-", stdin=io.BytesIO(raw), limits=limits)


def message(data: str | bytes, *, limits: ReadLimits | None = None) -> str:
    with pytest.raises(ManifestError) as caught:
        load(data, limits=limits)
    return str(caught.value)


def test_multi_document_stream_skips_empty_documents() -> None:
    assert load("a: 1\n---\n---\nb: 2\n...\n") == [{"a": 1}, {"b": 2}]


def test_json_is_yaml() -> None:
    assert load('{"kind": "ModelBooster", "spec": {"backends": []}}') == [
        {"kind": "ModelBooster", "spec": {"backends": []}}
    ]


def test_a_byte_order_mark_is_not_part_of_the_text() -> None:
    assert load(b"\xef\xbb\xbfkind: A\n") == [{"kind": "A"}]


def test_a_list_object_is_replaced_by_its_items() -> None:
    assert load("apiVersion: v1\nkind: List\nitems:\n- {kind: A}\n- {kind: B}\n") == [{"kind": "A"}, {"kind": "B"}]
    assert message("kind: List\nitems: [{kind: A}, 3]\n") == "<stdin>: document 1, item 2 is a number"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("a: 1\na: 2\n", "<stdin>: not valid YAML: found duplicate key 'a' (line 2, column 1)"),
        ("a: !!binary aGVsbG8=\n", "<stdin>: document 1: a binary value has no JSON form (line 1, column 4)"),
        ("? [1, 2]\n: x\n", "<stdin>: not valid YAML: found a non-scalar key (line 1, column 3)"),
        ("42\n", "<stdin>: document 1 is a number, expected an object with apiVersion and kind"),
        ("- a\n", "<stdin>: document 1 is a list, expected an object with apiVersion and kind"),
        ("[" * 200, "<stdin>: document 1: nested more than 100 levels deep (line 1, column 100)"),
        ("", "<stdin>: is empty (no documents, or only comments), expected YAML or JSON objects"),
        (" \n\n", "<stdin>: is empty (no documents, or only comments), expected YAML or JSON objects"),
        ("# x\n---\n~\n", "<stdin>: is empty (no documents, or only comments), expected YAML or JSON objects"),
        (b"\xff\xfe\x00b", "<stdin>: is binary data, expected YAML or JSON objects as UTF-8 text"),
        (b"kind: A\n\x00", "<stdin>: is binary data, expected YAML or JSON objects as UTF-8 text"),
        ("kind: A\n".encode("utf-16"), "<stdin>: is binary data, expected YAML or JSON objects as UTF-8 text"),
        (b"kind: \xe9t\xe9\n", "<stdin>: is binary data, expected YAML or JSON objects as UTF-8 text"),
    ],
    ids=[
        "duplicate",
        "binary-tag",
        "non-scalar-key",
        "number",
        "list",
        "deep",
        "empty",
        "blank",
        "comment-and-null",
        "binary",
        "nul",
        "utf-16",
        "latin-1",
    ],
)
def test_unusable_input_gives_one_line(data: str | bytes, expected: str) -> None:
    assert message(data) == expected


def test_input_larger_than_the_limit_is_refused_before_it_is_parsed() -> None:
    limits = ReadLimits(max_bytes=2 * 1024 * 1024)
    assert load(b"a: " + b"x" * (limits.max_bytes - 4) + b"\n", limits=limits)
    too_large = b"a: [" + b"x" * limits.max_bytes  # not even YAML: the size is judged first
    assert message(too_large, limits=limits) == "<stdin>: is larger than 2 MiB, the most read from one input"


@pytest.mark.parametrize(
    "data",
    [b"", b"# c\n", b"\xff\x00", b"\x00", b"[" * 500, b"a: *b\n", b"- 1\n", b"a: &a [*a]\n", b"kind: List\nitems: [1]"],
    ids=["empty", "comment", "binary", "nul", "deep", "undefined-alias", "list", "recursive", "list-item"],
)
def test_a_file_and_the_same_bytes_on_stdin_get_the_same_message(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(data)
    with pytest.raises(ManifestError) as from_file:
        load_documents(str(path))
    with pytest.raises(ManifestError) as from_stdin:
        load_documents("-", stdin=io.BytesIO(data))
    assert str(from_file.value) == str(from_stdin.value).replace("<stdin>", str(path), 1)


def test_stdin_replaced_or_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"kind: A\n")))
    assert load_documents("-") == [{"kind": "A"}]
    monkeypatch.setattr("sys.stdin", None)  # what Python sets when the process starts with stdin closed
    with pytest.raises(ManifestError, match=r"^<stdin>: is closed, expected YAML or JSON objects$"):
        load_documents("-")


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r": no such file$"):
        load_documents(str(tmp_path / "missing.yaml"))
    with pytest.raises(ManifestError, match=r": is a directory, expected a file$"):
        load_documents(str(tmp_path))


def test_identity_checks() -> None:
    check_modelbooster_identity({"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster"})
    with pytest.raises(ManifestError) as caught:
        check_modelbooster_identity({"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": 3}, where="f: ")
    assert str(caught.value) == "f: kind is 3, expected ModelBooster"
