"""modelbooster/manifests.py: YAML read as Kubernetes reads it, and one-line errors for unusable files."""

from __future__ import annotations

import io

import pytest

from modelbooster.manifests import ManifestError, check_modelbooster_identity, load_documents


def load(text: str) -> list[dict[str, object]]:
    return load_documents("-", stdin=io.StringIO(text))


def test_multi_document_stream_skips_empty_documents() -> None:
    assert load("a: 1\n---\n---\nb: 2\n...\n") == [{"a": 1}, {"b": 2}]


def test_timestamps_stay_strings_and_exponent_numbers_are_numbers() -> None:
    (document,) = load("t: 2025-01-02T03:04:05Z\nd: 2025-01-02\ne: 1e6\nf: 2.5E-3\ni: 10\ns: '1e6'\n")
    assert document == {"t": "2025-01-02T03:04:05Z", "d": "2025-01-02", "e": 1e6, "f": 2.5e-3, "i": 10, "s": "1e6"}
    assert isinstance(document["i"], int)


def test_scalar_keys_become_text() -> None:
    assert load("1: a\ntrue: b\nnull: c\n") == [{"1": "a", "true": "b", "null": "c"}]


def test_json_is_yaml() -> None:
    assert load('{"kind": "ModelBooster", "spec": {"backends": []}}') == [
        {"kind": "ModelBooster", "spec": {"backends": []}}
    ]


def test_a_list_object_is_replaced_by_its_items() -> None:
    assert load("apiVersion: v1\nkind: List\nitems:\n- {kind: A}\n- {kind: B}\n") == [{"kind": "A"}, {"kind": "B"}]
    with pytest.raises(ManifestError, match=r"^<stdin>: document 1, item 2 is a number$"):
        load("kind: List\nitems: [{kind: A}, 3]\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\na: 2\n", "<stdin>: not valid YAML: found duplicate key 'a' (line 2, column 1)"),
        ("a: !!binary aGVsbG8=\n", "<stdin>: document 1: a value of YAML type bytes has no JSON form"),
        ("? [1, 2]\n: x\n", "<stdin>: not valid YAML: "),
        ("\t- bad indent", "<stdin>: not valid YAML: "),
        ("42\n", "<stdin>: document 1 is a number, expected an object with apiVersion and kind"),
        ("", "<stdin>: no documents (the file is empty)"),
    ],
)
def test_unusable_input(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        load(text)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_identity_checks() -> None:
    check_modelbooster_identity({"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster"})
    with pytest.raises(ManifestError) as caught:
        check_modelbooster_identity({"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": 3}, where="f: ")
    assert str(caught.value) == "f: kind is 3, expected ModelBooster"
