"""modelbooster/yaml_loader.py: Kubernetes' reading of YAML, and the bounds, with libyaml's and PyYAML's parsers.

Every test runs with each parser this PyYAML has: the bounds rest on hooks that both composers must call.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from modelbooster import yaml_loader
from modelbooster.yaml_loader import LOADERS, ReadLimits, YAMLInputError, load_stream

SMALL = ReadLimits(max_depth=5, max_documents=3, base_values=20, values_per_character=1, max_values=1_000)


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__)
def loader(request: pytest.FixtureRequest) -> Any:
    return request.param


def load(text: str, loader: Any, *, limits: ReadLimits = yaml_loader.DEFAULT_LIMITS) -> list[Any]:
    return load_stream(text, limits=limits, loader=loader)


def refusal(text: str, loader: Any, *, limits: ReadLimits = yaml_loader.DEFAULT_LIMITS) -> YAMLInputError:
    with pytest.raises(YAMLInputError) as caught:
        load(text, loader, limits=limits)
    return caught.value


def bomb(levels: int, *, width: int = 9) -> str:
    """The classic "billion laughs": each level lists the previous one `width` times."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def nested(depth: int, *, style: str) -> str:
    """A document of exactly `depth` levels: `depth - 1` collections around one scalar."""
    if style == "flow":
        return "[" * (depth - 1) + "x" + "]" * (depth - 1)
    if style == "json":
        return '{"a": ' * (depth - 1) + "1" + "}" * (depth - 1)
    return "".join("  " * level + "k:\n" for level in range(depth - 2)) + "  " * (depth - 2) + "k: x\n"


def test_libyaml_is_preferred_when_pyyaml_has_it() -> None:
    assert LOADERS[-1] is yaml_loader.PythonLoader
    assert (LOADERS[0].__name__ == "LibyamlLoader") == yaml.__with_libyaml__


# --- Kubernetes' reading ----------------------------------------------------------------------------------------


def test_timestamps_stay_strings_and_exponent_numbers_are_numbers(loader: Any) -> None:
    (document,) = load("t: 2025-01-02T03:04:05Z\nd: 2025-01-02\ne: 1e6\nf: 2.5E-3\ni: 10\ns: '1e6'\n", loader)
    assert document == {"t": "2025-01-02T03:04:05Z", "d": "2025-01-02", "e": 1e6, "f": 2.5e-3, "i": 10, "s": "1e6"}
    assert isinstance(document["i"], int)


def test_scalar_keys_become_text_and_a_repeated_key_is_an_error(loader: Any) -> None:
    assert load("1: a\ntrue: b\nnull: c\n", loader) == [{"1": "a", "true": "b", "null": "c"}]
    assert refusal("a: 1\na: 2\n", loader).problem == "not valid YAML: found duplicate key 'a' (line 2, column 1)"


def test_aliases_give_independent_copies(loader: Any) -> None:
    (document,) = load("base: &b {image: x, env: [1]}\none: *b\n", loader)
    assert document == {"base": {"image": "x", "env": [1]}, "one": {"image": "x", "env": [1]}}
    document["one"]["env"].append(2)  # a copy, not the anchor's object: editing one leaves the other alone
    assert document["base"]["env"] == [1]


def test_merge_keys_yield_to_the_mappings_own_keys_and_to_earlier_merges(loader: Any) -> None:
    text = (
        "a: &a {image: a, port: 1}\n"
        "b: &b {image: b, port: 2, cpu: 2}\n"
        "plain: {<<: *a, image: own}\n"
        "listed: {<<: [*a, *b]}\n"
        # Merged before the mapping that merges it is itself read (PyYAML flattens such a mapping in place).
        "outer: {inner: &i {<<: *a, port: 9}}\n"
        "again: {<<: *i}\n"
    )
    (document,) = load(text, loader)
    assert document["plain"] == {"image": "own", "port": 1}
    assert document["listed"] == {"image": "a", "port": 1, "cpu": 2}
    assert document["outer"]["inner"] == document["again"] == {"image": "a", "port": 9}
    duplicate = refusal("a: {<<: {x: 1}, y: 1, y: 2}\n", loader)
    assert duplicate.problem.startswith("not valid YAML: found duplicate key 'y'")
    assert "expected a mapping or list of mappings" in refusal("a: {<<: [x]}\n", loader).problem


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: !!binary aGVsbG8=\n", "a binary value has no JSON form (line 1, column 4)"),
        ("a: !!timestamp 2025-01-01\n", "a timestamp has no JSON form (line 1, column 4)"),
        ("a: !!set {x}\n", "a set has no JSON form (line 1, column 4)"),
        ("a: !!omap [x: 1]\n", "an ordered map has no JSON form (line 1, column 4)"),
        ("a: !!pairs [x: 1]\n", "a list of pairs has no JSON form (line 1, column 4)"),
        ("a: .inf\n", "the value inf has no JSON form"),
        ("a: .nan\n", "the value nan has no JSON form"),
        ("a: !!bool maybe\n", "a value cannot be read (line 1, column 1): 'maybe'"),
        ("a: !!int twelve\n", "a value cannot be read (line 1, column 1): invalid literal for int()"),
        ("a: " + "7" * 5000 + "\n", "a value cannot be read (line 1, column 1): Exceeds the limit (4300 digits)"),
    ],
    ids=["binary", "timestamp", "set", "omap", "pairs", "inf", "nan", "bool", "int", "huge-int"],
)
def test_values_without_a_json_form_are_refused_by_document(loader: Any, text: str, problem: str) -> None:
    error = refusal("---\n---\n" + "ok: 1\n---\n" + text, loader)
    assert error.document == 2  # the empty documents are not counted
    assert error.problem.startswith(problem.replace("line 1", "line 5"))


# --- depth --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["flow", "json", "block"])
def test_depth_up_to_the_limit_is_read_and_one_more_is_refused(loader: Any, style: str) -> None:
    limits = ReadLimits(max_depth=7)
    assert load(nested(7, style=style), loader, limits=limits)
    error = refusal(nested(8, style=style), loader, limits=limits)
    assert error.document == 1
    assert error.problem.startswith("nested more than 7 levels deep (line ")


@pytest.mark.parametrize(
    "text",
    ["[" * 5_000, "- " * 5_000 + "x", '{"a":' * 5_000, "[" * 1_000_000],
    ids=["flow-5000", "block-5000", "json-5000", "flow-1000000"],
)
def test_deep_nesting_is_refused_before_the_composer_recurses(loader: Any, text: str) -> None:
    # libyaml's own composer recurses in C: a million `[` crash PyYAML's plain CSafeLoader (SIGSEGV).
    assert refusal(text, loader).problem.startswith("nested more than 100 levels deep")


# Text that some libyaml release refuses in words of its own: deeper than its scanner's flow limit (1,000 in
# libyaml 0.2.6), and plain syntax errors, which libyaml and PyYAML word differently.
NOT_YAML_OR_TOO_DEEP = {
    "flow-5000": "[" * 5_000,
    "flow-mapping-5000": "{a: " * 5_000,
    "flow-then-block": "a: 1\n---\nb: " + "[" * 2_000,
    "unclosed-flow": "a: [1, 2\n",
    "unclosed-quote": 'a: "text\n',
    "bad-indentation": "a:\n  b: 1\n c: 2\n",
    "tab-indent": "a:\n\tb: 1\n",
    "stray-flow-end": "a: ]\n",
    "mapping-in-scalar": "a: b: c\n",
    "unknown-directive-then-garbage": "%YAML 1.1\n%YAML 1.1\n---\na: 1\n",
}


@pytest.mark.parametrize("text", NOT_YAML_OR_TOO_DEEP.values(), ids=NOT_YAML_OR_TOO_DEEP.keys())
def test_every_parser_refuses_with_the_same_words(text: str) -> None:
    # Which libyaml a machine has must change neither what is refused nor how it is said.
    answers = {loader.__name__: refusal(text, loader) for loader in LOADERS}
    assert len({(error.problem, error.document) for error in answers.values()}) == 1, answers


class _LibyamlWithAFlowLimit(yaml_loader.PythonLoader):
    """A parser that refuses deep flow collections while scanning ahead, in words of its own, as libyaml 0.2.6
    does at 1,000 levels: stands in for whichever libyaml release a machine has, so the test runs on all."""

    def check_node(self) -> bool:
        if "[" * 150 in self.buffer:  # type: ignore[attr-defined]
            mark = yaml.Mark("<unicode string>", 150, 0, 150, None, None)
            raise yaml.scanner.ScannerError("while increasing flow level", mark, "exceeded maximum nesting depth", mark)
        return super().check_node()


def test_a_parser_that_refuses_at_its_own_limit_is_overruled_by_pyyamls_reading() -> None:
    error = refusal("ok: 1\n---\n" + "[" * 5_000, _LibyamlWithAFlowLimit)
    assert error.document == 2
    assert error.problem == "nested more than 100 levels deep (line 3, column 100)"
    # Text it accepts is read by it alone.
    assert load("a: [[1]]\n", _LibyamlWithAFlowLimit) == [{"a": [[1]]}]


def test_depth_counts_what_aliases_refer_to(loader: Any) -> None:
    # Each anchor is 3 levels deep; each alias adds its anchor's depth below the alias.
    text = "a: &a [[x]]\nb: &b [[*a]]\nc: &c [[*b]]\n"
    assert load(text, loader, limits=ReadLimits(max_depth=8))
    error = refusal(text, loader, limits=ReadLimits(max_depth=7))
    assert error.problem == "nested more than 7 levels deep once its aliases are expanded (line 1, column 1)"


def test_an_alias_inside_its_own_anchor_is_refused(loader: Any) -> None:
    error = refusal("a: &a [1, *a]\n", loader)
    assert error.problem == "an alias refers to a node that contains it (line 1, column 4)"


# --- values and documents -------------------------------------------------------------------------------------------


def test_an_alias_bomb_is_refused_before_anything_is_constructed(loader: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    constructed: list[object] = []
    real = loader.construct_document
    monkeypatch.setattr(loader, "construct_document", lambda self, node: constructed.append(node) or real(self, node))
    text = bomb(30)  # 9**30 values, about 900 bytes
    error = refusal(text, loader)
    budget = yaml_loader.DEFAULT_LIMITS.value_budget(len(text))
    assert error.document == 1
    assert error.problem.startswith(f"more than {budget:,} values once its aliases are expanded (the bound")
    assert constructed == []


def test_the_value_budget_is_exact(loader: Any) -> None:
    # `[x, x, ...]` of n items is n + 1 values; aliases count as copies of what they refer to.
    limits = ReadLimits(base_values=50, values_per_character=0)
    assert load("[" + ", ".join(["x"] * 49) + "]", loader, limits=limits)
    assert refusal("[" + ", ".join(["x"] * 50) + "]", loader, limits=limits).problem.startswith("more than 50 values")
    aliased = "a: &a [1, 2, 3, 4]\nb: [*a, *a, *a, *a, *a, *a, *a, *a]\n"  # 1 + 2 + 5 + 1 + 8 * 5 = 49
    assert load(aliased, loader, limits=limits)
    one_more = refusal(aliased.replace("*a]", "*a, *a]"), loader, limits=limits)
    assert one_more.problem.startswith("more than 50 values once")


def test_the_budget_is_shared_by_the_documents_of_a_stream(loader: Any) -> None:
    limits = ReadLimits(base_values=10, values_per_character=0)
    assert load("[a, b]\n---\n[c, d]\n---\n[e, f, g]\n", loader, limits=limits)  # 3 + 3 + 4 values
    error = refusal("[a, b]\n---\n[c, d]\n---\n[e, f, g, h]\n", loader, limits=limits)
    assert (error.document, error.problem) == (3, "more than 4 values (line 5, column 1)")


def test_the_budget_grows_with_the_input_up_to_a_cap() -> None:
    limits = ReadLimits(base_values=100, values_per_character=3, max_values=1_000)
    assert [limits.value_budget(n) for n in (0, 10, 300, 10**9)] == [100, 130, 1_000, 1_000]


def test_text_without_aliases_stays_within_half_the_budget_per_character(loader: Any) -> None:
    # The densest YAML there is: empty single-pair mappings in a flow sequence, three values for two
    # characters (libyaml refuses that form; PyYAML's parser, which then decides, reads it: never a bound).
    half = ReadLimits(base_values=0, values_per_character=yaml_loader.DEFAULT_LIMITS.values_per_character // 2)
    for text in ("[" + "?," * 2_000 + "]", "-\n" * 2_000, "- {? }\n" * 1_000, "[" + "{}," * 2_000 + "]"):
        assert load(text, loader, limits=half)


def test_more_documents_than_the_limit_are_refused(loader: Any) -> None:
    assert load("a: 1\n---\n---\nb: 2\n", loader, limits=SMALL) == [{"a": 1}, {"b": 2}]
    assert refusal("---\n" * 4, loader, limits=SMALL).problem == "more than 3 documents"


def test_syntax_errors_name_line_and_column(loader: Any) -> None:
    error = refusal("a: [1, 2\nb: 3\n", loader)
    assert error.document is None
    assert error.problem.startswith("not valid YAML: ")
    assert "(line " in error.problem
