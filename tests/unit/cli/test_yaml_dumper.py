"""modelbooster/yaml_dumper.py: what `render` and `validate -o yaml` print reads back as the same objects."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelbooster.manifests import load_documents
from modelbooster.yaml_dumper import EMITTERS, dump_documents
from modelbooster.yaml_loader import EXPONENT_FLOAT, EXPONENT_FLOAT_FIRST, LOADERS, load_stream
from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from shared.defaults import apply_defaults
from shared.validation import parse_modelbooster
from tests.unit.synthesis.support import HERE

EXAMPLES = sorted((HERE.parents[2] / "examples").glob("*.yaml"))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.text(st.sampled_from("a \t\n\r\x85\u2028\u2029\ufeff'\":#-|>&*!%@`"), max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)
objects = st.dictionaries(st.text(), json_values, max_size=5)


def _oracle(base: type[Any]) -> type[Any]:
    """PyYAML's own representer and serializer (on the same emitter) with the same choices of style."""

    class Oracle(base):  # type: ignore[misc, valid-type]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def represent_str(dumper: Any, value: str) -> Any:
        breaks = any(character in value for character in "\x85\u2028\u2029")
        style = '"' if breaks else "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Oracle.add_representer(str, represent_str)
    Oracle.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT_FLOAT, EXPONENT_FLOAT_FIRST)
    return Oracle


ORACLES = {yaml.emitter.Emitter: _oracle(yaml.SafeDumper)}
if yaml.__with_libyaml__:
    ORACLES[EMITTERS[0]] = _oracle(yaml.CSafeDumper)


def children_of_the_examples() -> list[dict[str, Any]]:
    children: list[dict[str, Any]] = []
    for example in EXAMPLES:
        for document in load_documents(str(example)):
            document["metadata"].setdefault("namespace", "default")
            document["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
            children += synthesize(parse_modelbooster(apply_defaults(document).obj), SynthesisSettings())
    return children


def test_libyaml_is_preferred_when_pyyaml_has_it() -> None:
    assert EMITTERS[-1] is yaml.emitter.Emitter
    assert (EMITTERS[0].__name__ == "CEmitter") == yaml.__with_libyaml__


def test_both_emitters_write_the_same_text() -> None:
    children = children_of_the_examples()
    assert len(children) > 10
    texts = {dump_documents(children, emitter=emitter) for emitter in EMITTERS}
    assert len(texts) == 1


def test_block_style_one_document_per_object_no_anchors() -> None:
    shared = {"name": "shared", "value": "x"}
    text = dump_documents([{"a": [shared, shared], "script": "line 1\nline 2\n", "empty": {}}, {"b": "x" * 300}])
    assert text == (
        "a:\n- name: shared\n  value: x\n- name: shared\n  value: x\n"
        "script: |\n  line 1\n  line 2\n"
        "empty: {}\n"
        f"---\nb: {'x' * 300}\n"
    )


@pytest.mark.parametrize("emitter", EMITTERS, ids=lambda emitter: emitter.__name__)
def test_strings_that_kubernetes_reads_as_numbers_are_quoted(emitter: Any) -> None:
    # A revision digest such as 7753e39375503464 is a string; unquoted, YAML 1.2 reads 7.75e+39375503464.
    digests = {"revision": "7753e39375503464", "plain": "1e6", "negative": "-2E-3", "name": "abc1e6"}
    text = dump_documents([digests], emitter=emitter)
    assert "revision: '7753e39375503464'\n" in text
    assert "name: abc1e6\n" in text
    assert load_stream(text) == [digests]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents=st.lists(objects, min_size=1, max_size=3))
def test_the_text_is_what_pyyamls_serializer_writes(documents: list[dict[str, Any]]) -> None:
    for emitter, oracle in ORACLES.items():
        expected = yaml.dump_all(
            documents, Dumper=oracle, sort_keys=False, allow_unicode=True, width=2**31 - 1, default_flow_style=False
        )
        assert dump_documents(documents, emitter=emitter) == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents=st.lists(objects, min_size=1, max_size=3))
def test_any_json_objects_read_back_the_same_with_either_parser(documents: list[dict[str, Any]]) -> None:
    for emitter in EMITTERS:
        text = dump_documents(documents, emitter=emitter)
        for loader in LOADERS:
            assert load_stream(text, loader=loader) == documents
