"""YAML read the way Kubernetes reads it, within bounds fixed before reading starts.

Kubernetes' reading, not PyYAML's default one: timestamps stay strings, `1e6` is a number (YAML 1.2), a key
given twice is an error instead of a silently lost value, keys become text, and only the values JSON has are
accepted (not NaN or infinity, which JSON cannot carry either).

The bounds (`ReadLimits`; `max_bytes` is for the caller, which reads the text): a document nests at most
`max_depth` levels, also counting what its aliases refer to; a stream holds at most `max_documents`
documents; and its values, counted with every alias expanded, number at most `value_budget(characters)`:
an allowance plus a few values per input character, never more than `max_values`. Text without aliases never
comes near the budget (every value takes at least a character or two); an alias bomb, a few hundred bytes
whose aliases expand to billions of values, is refused once its few nodes are composed and before anything
is built from them.

libyaml's parser (`CSafeLoader`) is used when PyYAML has it, the pure-Python one otherwise. The bounds hold
for both: both composers call the resolver's `descend_resolver` hook before they build each node (so the
depth is checked before libyaml's own recursion goes deeper, and the values are counted as they are
composed), and the expansion is measured on the composed node graph, which both hand back to Python.

Which text is refused, and with which words, must not depend on the libyaml a machine happens to have:
libyaml 0.2.6 (in PyYAML 6.0.4's wheels) stops a flow collection at 1,000 levels while scanning ahead, before
the composer reaches our bound of 100, and words it its own way; 0.2.5 did not. So libyaml only ever accepts:
text it refuses as not valid YAML is read again by PyYAML's own parser, whose answer stands (refusals are the
rare path; valid text is read once, by libyaml).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

# YAML 1.2 floats with an exponent and no dot (`1e6`), which YAML 1.1 reads as strings.
EXPONENT_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+$")
EXPONENT_FLOAT_FIRST = list("-+0123456789.")
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class ReadLimits:
    max_bytes: int = 16 * 1024 * 1024  # kube-apiserver takes at most 3 MiB per object; this is a whole stream
    max_depth: int = 100  # a ModelBooster nests about 8 levels; engine configs a few more
    max_documents: int = 10_000
    base_values: int = 10_000
    values_per_character: int = 4  # the densest YAML (`[?,?]`) has 1.5 values per character
    max_values: int = 1_000_000  # six times a stream of 1,000 two-backend ModelBoosters

    def value_budget(self, characters: int) -> int:
        return min(self.max_values, self.base_values + self.values_per_character * characters)


class YAMLInputError(Exception):
    """Text that is not YAML, or YAML past a bound; `document` is the 1-based number of the non-empty document."""

    def __init__(self, problem: str, *, document: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.document = document


class _Refused(yaml.YAMLError):
    """Valid YAML that is past a bound or has no JSON form; a YAMLError, so that libyaml's composer unwinds."""


class _KubernetesReading(SafeConstructor, yaml.resolver.Resolver):
    """The Kubernetes reading of scalars and keys, and the depth and value count of the document being composed.

    Mixed into a parser (libyaml's or PyYAML's) to make a loader; `bound` is called before each document.
    """

    if TYPE_CHECKING:  # the parser half, libyaml's or PyYAML's

        def __init__(self, stream: str) -> None: ...
        def check_node(self) -> bool: ...
        def get_node(self) -> Node | None: ...
        def dispose(self) -> None: ...

    _max_depth: int = 0
    _values_left: int = 0
    _depth: int = 0
    _composed: int = 0

    def bound(self, *, max_depth: int, values_left: int) -> None:
        self._max_depth, self._values_left = max_depth, values_left
        self._depth = self._composed = 0

    def descend_resolver(self, current_node: Node | None, current_index: Any) -> None:
        # Called by both composers before building each node (aliases excepted); `current_node` is its parent.
        self._depth += 1
        self._composed += 1
        if self._depth > self._max_depth:
            raise _Refused(f"nested more than {self._max_depth} levels deep{_at(current_node)}")
        if self._composed > self._values_left:
            raise _Refused(f"more than {self._values_left:,} values{_at(current_node)}")

    def ascend_resolver(self) -> None:
        self._depth -= 1

    @property
    def composed(self) -> int:
        """Nodes composed for the current document, aliases not counted."""
        return self._composed

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        # Keys become text, as Kubernetes' YAML reader makes them, so that `1` and `true` stay distinct keys
        # (they are equal in Python), and a key given twice is an error rather than a lost value. A key
        # merged in with `<<` is not given twice when the mapping sets it too: the mapping's own value wins,
        # and the first merged mapping that has it wins over later ones. (PyYAML's `flatten_mapping` mixes
        # merged and own pairs, in place, so it cannot tell these apart.)
        merged: dict[Hashable, Any] = {}
        own: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                for source in _merge_sources(node, value_node):
                    for key, value in self.construct_mapping(source, deep=deep).items():
                        merged.setdefault(key, value)
                continue
            text = _scalar_key_text(self.construct_object(key_node)) if isinstance(key_node, ScalarNode) else None
            if text is None:
                raise ConstructorError(
                    "while constructing a mapping", node.start_mark, "found a non-scalar key", key_node.start_mark
                )
            if text in own:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {text!r}",
                    key_node.start_mark,
                )
            own[text] = self.construct_object(value_node, deep=deep)
        return merged | own if merged else own


def _merge_sources(node: MappingNode, value: Node) -> list[MappingNode]:
    """The mappings a `<<` key merges in, in order of precedence."""
    sources: list[Node] = list(value.value) if isinstance(value, SequenceNode) else [value]
    mappings = [source for source in sources if isinstance(source, MappingNode)]
    if len(mappings) != len(sources):
        problem = "expected a mapping or list of mappings for merging"
        raise ConstructorError("while constructing a mapping", node.start_mark, problem, value.start_mark)
    return mappings


_KubernetesReading.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
_KubernetesReading.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT_FLOAT, EXPONENT_FLOAT_FIRST)


def _refuse_tag(value: str) -> Callable[[yaml.SafeLoader, Node], NoReturn]:
    def refuse(loader: yaml.SafeLoader, node: Node) -> NoReturn:
        raise _Refused(f"{value} has no JSON form{_at(node)}")

    return refuse


# YAML types beyond JSON's, which only an explicit tag (`!!binary`, `!!set`, ...) can ask for here.
for _tag, _value in (
    ("binary", "a binary value"),
    ("timestamp", "a timestamp"),
    ("set", "a set"),
    ("omap", "an ordered map"),
    ("pairs", "a list of pairs"),
):
    _KubernetesReading.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag(_value))


class PythonLoader(_KubernetesReading, yaml.SafeLoader):
    """PyYAML's own parser and composer."""


LOADERS: tuple[type[_KubernetesReading], ...] = (PythonLoader,)
if yaml.__with_libyaml__:

    class LibyamlLoader(_KubernetesReading, yaml.CSafeLoader):
        """libyaml's parser and composer (7 times faster on 1,000 ModelBoosters); construction stays in Python."""

    LOADERS = (LibyamlLoader, PythonLoader)

DEFAULT_LIMITS = ReadLimits()


class _NotYAML(YAMLInputError):
    """The parser refused the text as YAML (as opposed to valid YAML past one of our bounds)."""


def load_stream(
    text: str, *, limits: ReadLimits = DEFAULT_LIMITS, loader: type[_KubernetesReading] = LOADERS[0]
) -> list[Any]:
    """The non-empty documents of a YAML (or JSON) stream as JSON-compatible data; YAMLInputError otherwise."""
    try:
        return _load_stream(text, limits=limits, loader=loader)
    except _NotYAML:
        if loader is PythonLoader:
            raise
    # libyaml refused the text: PyYAML's own parser decides, so that every libyaml release gives one answer.
    return _load_stream(text, limits=limits, loader=PythonLoader)


def _load_stream(text: str, *, limits: ReadLimits, loader: type[_KubernetesReading]) -> list[Any]:
    values_left = limits.value_budget(len(text))
    # Without an `&` there is no anchor, hence no alias: each document is the tree its composer counted.
    may_alias = "&" in text
    documents: list[Any] = []
    try:
        parser = loader(text)
    except yaml.YAMLError as error:  # PyYAML's reader refuses unprintable characters at once
        raise _NotYAML(f"not valid YAML: {_yaml_problem(error)}") from None
    try:
        for count in itertools.count(1):
            number = len(documents) + 1  # empty documents are skipped, and not numbered
            node = _compose(parser, count=count, number=number, limits=limits, values_left=values_left)
            if node is None:
                break
            if may_alias:
                values_left -= _expanded_size(node, max_depth=limits.max_depth, max_values=values_left, number=number)
            else:
                values_left -= parser.composed
            document = _construct(parser, node, number=number)
            if document is not None:
                documents.append(_plain(document, number=number))
    finally:
        parser.dispose()
    return documents


def _compose(
    parser: _KubernetesReading, *, count: int, number: int, limits: ReadLimits, values_left: int
) -> Node | None:
    """The node graph of the stream's `count`th document, composed within the bounds; None at the end."""
    try:
        if not parser.check_node():
            return None
        if count > limits.max_documents:
            raise YAMLInputError(f"more than {limits.max_documents:,} documents")
        parser.bound(max_depth=limits.max_depth, values_left=values_left)
        return parser.get_node()
    except _Refused as error:
        raise YAMLInputError(str(error), document=number) from None
    except yaml.YAMLError as error:
        raise _NotYAML(f"not valid YAML: {_yaml_problem(error)}") from None


def _construct(parser: _KubernetesReading, node: Node, *, number: int) -> Any:
    try:
        return parser.construct_document(node)
    except _Refused as error:
        raise YAMLInputError(str(error), document=number) from None
    except yaml.YAMLError as error:  # construction is Python for both parsers: no second reading needed
        raise YAMLInputError(f"not valid YAML: {_yaml_problem(error)}") from None
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as error:
        # PyYAML's own constructors on explicitly tagged nonsense, e.g. `!!int x`, `!!int ''`, `!!bool maybe`,
        # or an integer of more digits than Python converts.
        raise YAMLInputError(f"a value cannot be read{_at(node)}: {error}", document=number) from None


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _expanded_size(node: Node, *, max_depth: int, max_values: int, number: int) -> int:
    """The number of values of the document once every alias is expanded, computed on the node graph.

    An alias is the very node its anchor names, so the graph is small even when its expansion is not;
    sizes and depths are kept per node, and each node is visited once. Iterative, because chains of
    aliases can make the expansion deeper than the composer's own nesting.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) of its expansion
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        current, children_measured = stack.pop()
        key = id(current)
        if children_measured:
            on_path.discard(key)
            values, depth = 1, 1
            for child in _children(current):
                child_values, child_depth = measured[id(child)]
                values += child_values
                depth = max(depth, child_depth + 1)
            if depth > max_depth:
                problem = f"nested more than {max_depth} levels deep once its aliases are expanded"
                raise YAMLInputError(problem + _at(current), document=number)
            if values > max_values:
                problem = f"more than {max_values:,} values once its aliases are expanded (the bound for this input)"
                raise YAMLInputError(problem + _at(current), document=number)
            measured[key] = (values, depth)
        elif key not in measured:
            if key in on_path:
                raise YAMLInputError(f"an alias refers to a node that contains it{_at(current)}", document=number)
            on_path.add(key)
            stack.append((current, True))
            stack.extend((child, False) for child in _children(current) if id(child) not in measured)
    return measured[id(node)][0]


def _plain(value: Any, *, number: int) -> Any:
    """JSON-compatible data; the constructed document is a tree of at most the budgeted size by now."""
    if isinstance(value, dict):
        return {str(key): _plain(item, number=number) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item, number=number) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise YAMLInputError(f"the value {value} has no JSON form", document=number)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise YAMLInputError(f"a value of YAML type {type(value).__name__} has no JSON form", document=number)


def _scalar_key_text(key: object) -> str | None:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float)):
        return str(key)
    return None


def _at(node: Node | None) -> str:
    if node is None or node.start_mark is None:
        return ""
    return f" (line {node.start_mark.line + 1}, column {node.start_mark.column + 1})"


def _yaml_problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(problem)
