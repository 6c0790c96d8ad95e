"""YAML written for kubectl by the offline commands.

Block style, keys in insertion order, no anchors, multi-line strings as `|` blocks, no line folding; a string
that Kubernetes would read back as something else (`1e6`, a YAML 1.2 number) is quoted. libyaml's emitter is
used when PyYAML has it: PyYAML's own emitter spends about 80% of the time of rendering a large stream.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from modelbooster.yaml_loader import EXPONENT_FLOAT, EXPONENT_FLOAT_FIRST

# The widest line either emitter accepts (libyaml's is a C int): long strings are never folded.
_NO_FOLDING = 2**31 - 1
_STR = yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG
_MAP = yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG
_SEQ = yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG
_DEFAULT_TAGS = {ScalarNode: _STR, SequenceNode: _SEQ, MappingNode: _MAP}
_PLAIN_TAG_CACHE_SIZE = 65_536
_OTHER_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")


class _Writing(yaml.representer.SafeRepresenter, yaml.resolver.Resolver):
    """The representation half of a dumper, mixed into an emitter (libyaml's or PyYAML's).

    With libyaml emitting, the time goes to the Python calls around it, once or twice per value: so JSON's
    types are represented directly (SafeRepresenter's generic path keeps alias records and looks each
    value's type up along its MRO; every other type still takes it), and the implicit tag of a plain
    scalar is cached, as the same keys and values recur in every child.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plain_tags: dict[str, str] = {}

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent_data(self, data: Any) -> Node:
        kind = type(data)
        if kind is str:
            return _string(data)
        if kind is dict:
            represent = self.represent_data
            pairs = [
                (_string(key) if type(key) is str else represent(key), represent(value)) for key, value in data.items()
            ]
            return MappingNode(_MAP, pairs, flow_style=False)
        if kind is list:
            return SequenceNode(_SEQ, [self.represent_data(item) for item in data], flow_style=False)
        node: Node = super().represent_data(data)
        return node

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        # The emitters ask, for every node, which tag it would have without one. Only a plain scalar's
        # answer depends on its text: the rest is the default tag of its kind, as no path resolvers are set.
        if kind is ScalarNode and implicit[0]:
            tag = self._plain_tags.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]  # untyped stub
                if len(self._plain_tags) < _PLAIN_TAG_CACHE_SIZE:
                    self._plain_tags[value] = tag
            return tag
        return _DEFAULT_TAGS[kind]


def _string(value: str) -> ScalarNode:
    if not value.isascii() and _OTHER_LINE_BREAKS.search(value):
        # YAML 1.1 line breaks besides \n: PyYAML's own emitter writes them raw in quoted and block styles,
        # where they are read back as folded spaces or \n; escaped in double quotes they stay what they are.
        return ScalarNode(_STR, value, style='"')
    return ScalarNode(_STR, value, style="|" if "\n" in value else None)


_Writing.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT_FLOAT, EXPONENT_FLOAT_FIRST)


class PythonDumper(_Writing, yaml.SafeDumper):
    """PyYAML's own emitter."""


DUMPERS: tuple[type[Any], ...] = (PythonDumper,)
if yaml.__with_libyaml__:

    class LibyamlDumper(_Writing, yaml.CSafeDumper):
        """libyaml's emitter; representation stays in Python."""

    DUMPERS = (LibyamlDumper, PythonDumper)


def dump_documents(documents: Iterable[dict[str, Any]], *, dumper: type[Any] = DUMPERS[0]) -> str:
    """The objects as one YAML stream, `---` between documents."""
    return yaml.dump_all(
        documents, Dumper=dumper, sort_keys=False, allow_unicode=True, width=_NO_FOLDING, default_flow_style=False
    )
