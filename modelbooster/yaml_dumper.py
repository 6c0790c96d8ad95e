"""YAML written for kubectl by the offline commands.

Block style, keys in insertion order, no anchors, multi-line strings as `|` blocks, no line folding; a string
that Kubernetes would read back as something else (`1e6`, a YAML 1.2 number) is quoted.

The objects are JSON trees, so they go to the emitter as events straight away: PyYAML's representer and
serializer would build a node per value and then call back into Python five times per value (tag
resolution, path resolvers), which cost more than libyaml's emitting itself. libyaml's emitter is used when
PyYAML has it; PyYAML's own emitter, which takes the same events, otherwise.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from typing import Any

import yaml
from yaml.emitter import Emitter
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import ScalarNode

from modelbooster.yaml_loader import EXPONENT_FLOAT, EXPONENT_FLOAT_FIRST

# The widest line both emitters accept (libyaml's is a C int): long strings are never folded.
_NO_FOLDING = 2**31 - 1
_STR = yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG
_PLAIN_CACHE_SIZE = 65_536
_OTHER_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")


class _Resolver(yaml.resolver.Resolver):
    """The tags plain scalars would be read with: PyYAML's, and YAML 1.2's exponent floats."""


_Resolver.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT_FLOAT, EXPONENT_FLOAT_FIRST)
_RESOLVER = _Resolver()
# The representer only spells floats here (`.inf`, `1.0e+16`): every other type is written directly.
_FLOATS = yaml.representer.SafeRepresenter()

EMITTERS: tuple[type[Any], ...] = (Emitter,)
if yaml.__with_libyaml__:
    from yaml._yaml import CEmitter

    EMITTERS = (CEmitter, Emitter)


def dump_documents(documents: Iterable[dict[str, Any]], *, emitter: type[Any] = EMITTERS[0]) -> str:
    """The objects as one YAML stream, `---` between documents."""
    out = io.StringIO()
    _Writer(emitter(out, allow_unicode=True, width=_NO_FOLDING).emit).stream(documents)
    return out.getvalue()


class _Writer:
    """Events for JSON trees, with the implicit-tag flags PyYAML's serializer would give them."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        self._plain_is_text: dict[str, bool] = {}  # keys and values recur in every child

    def stream(self, documents: Iterable[Any]) -> None:
        self._emit(StreamStartEvent())
        for document in documents:
            self._emit(DocumentStartEvent(explicit=False))
            self._value(document)
            self._emit(DocumentEndEvent(explicit=False))
        self._emit(StreamEndEvent())

    def _value(self, value: Any) -> None:
        kind = type(value)
        if kind is str:
            self._text(value)
        elif kind is dict:
            self._emit(MappingStartEvent(None, None, True, flow_style=False))
            for key, item in value.items():
                self._value(key)
                self._value(item)
            self._emit(MappingEndEvent())
        elif kind is list:
            self._emit(SequenceStartEvent(None, None, True, flow_style=False))
            for item in value:
                self._value(item)
            self._emit(SequenceEndEvent())
        elif value is None:
            self._emit(ScalarEvent(None, None, (True, False), "null"))
        elif kind is bool:
            self._emit(ScalarEvent(None, None, (True, False), "true" if value else "false"))
        elif kind is int:
            self._emit(ScalarEvent(None, None, (True, False), str(value)))
        elif kind is float:
            node: ScalarNode = _FLOATS.represent_float(value)
            plain = _RESOLVER.resolve(ScalarNode, node.value, (True, False)) == node.tag  # type: ignore[no-untyped-call]
            self._emit(ScalarEvent(None, node.tag, (plain, False), node.value))
        else:
            raise TypeError(f"no YAML form for a value of type {kind.__name__}")

    def _text(self, value: str) -> None:
        plain = self._plain_is_text.get(value)
        if plain is None:
            plain = _RESOLVER.resolve(ScalarNode, value, (True, False)) == _STR  # type: ignore[no-untyped-call]
            if len(self._plain_is_text) < _PLAIN_CACHE_SIZE:
                self._plain_is_text[value] = plain
        self._emit(ScalarEvent(None, None, (plain, True), value, style=_style(value)))


def _style(value: str) -> str | None:
    if not value.isascii() and _OTHER_LINE_BREAKS.search(value):
        # YAML 1.1 line breaks besides \n: PyYAML's own emitter writes them raw in quoted and block styles,
        # where they are read back as folded spaces or \n; escaped in double quotes they stay what they are.
        return '"'
    return "|" if "\n" in value else None
