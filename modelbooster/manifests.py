"""Reading manifest files (YAML or JSON, one or many documents) for the offline commands.

Every problem with the file itself — missing, not text, not YAML, empty, a document that is not an object,
the wrong kind — is a `ManifestError` whose message is one line naming the file (and document) at fault.

YAML is read the way Kubernetes reads it, not the way PyYAML does by default: timestamps stay strings,
`1e6` is a number (YAML 1.2), and a key given twice is an error instead of silently losing a value.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

from shared.constants import KIND_MODEL_BOOSTER, WORKLOAD_API_VERSION

STDIN = "-"


class ManifestError(Exception):
    """A one-line reason why a manifest cannot be used."""


class _Loader(yaml.SafeLoader):
    """SafeLoader with Kubernetes' reading of YAML (see the module docstring)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        # Keys become text here, as Kubernetes' YAML reader does, so `1` and `true` stay distinct keys
        # (they are equal in Python) and a key given twice is an error rather than a lost value.
        self.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            text = _scalar_key_text(key)
            if text is None:
                raise ConstructorError(
                    "while constructing a mapping", node.start_mark, "found a non-scalar key", key_node.start_mark
                )
            if text in mapping:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {text!r}",
                    key_node.start_mark,
                )
            mapping[text] = self.construct_object(value_node, deep=deep)
        return mapping


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


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def source_name(source: str) -> str:
    return "<stdin>" if source == STDIN else source


def load_documents(source: str, *, stdin: TextIO | None = None) -> list[dict[str, Any]]:
    """The non-empty documents of a file (or `-` for stdin), each a JSON-compatible object.

    A `kind: List` document is replaced by its items, as kubectl does.
    """
    name = source_name(source)
    text = _read(source, stdin=stdin)
    try:
        raw = [document for document in yaml.load_all(text, Loader=_Loader) if document is not None]
    except yaml.YAMLError as error:
        raise ManifestError(f"{name}: not valid YAML: {_yaml_problem(error)}") from None
    documents: list[dict[str, Any]] = []
    for number, document in enumerate(raw, start=1):
        plain = _plain(document, where=f"{name}: document {number}")
        if not isinstance(plain, dict):
            raise ManifestError(
                f"{name}: document {number} is {_describe(plain)}, expected an object with apiVersion and kind"
            )
        if plain.get("kind") == "List" and isinstance(plain.get("items"), list):
            for item_number, item in enumerate(plain["items"], start=1):
                if not isinstance(item, dict):
                    raise ManifestError(f"{name}: document {number}, item {item_number} is {_describe(item)}")
                documents.append(item)
        else:
            documents.append(plain)
    if not documents:
        raise ManifestError(f"{name}: no documents (the file is empty)")
    return documents


def check_modelbooster_identity(document: Mapping[str, Any], *, where: str = "") -> None:
    """Raise ManifestError unless the document says it is a ModelBooster of our API version.

    `where` prefixes the message, e.g. `model.yaml: document 2: `.
    """
    kind = document.get("kind")
    if kind != KIND_MODEL_BOOSTER:
        shown = "missing" if kind is None else f"{_show(kind)}"
        raise ManifestError(f"{where}kind is {shown}, expected {KIND_MODEL_BOOSTER}")
    api_version = document.get("apiVersion")
    if api_version != WORKLOAD_API_VERSION:
        shown = "missing" if api_version is None else f"{_show(api_version)}"
        raise ManifestError(f"{where}apiVersion is {shown}, expected {WORKLOAD_API_VERSION}")


def _read(source: str, *, stdin: TextIO | None) -> str:
    name = source_name(source)
    if source == STDIN:
        stream = stdin if stdin is not None else sys.stdin
        try:
            return stream.read()
        except UnicodeDecodeError:
            raise ManifestError(f"{name}: not UTF-8 text") from None
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ManifestError(f"{name}: is a directory, expected a file") from None
    except PermissionError:
        raise ManifestError(f"{name}: permission denied") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{name}: not UTF-8 text") from None
    except OSError as error:
        raise ManifestError(f"{name}: cannot read: {error.strerror or error}") from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(problem)


def _plain(value: Any, *, where: str) -> Any:
    """JSON-compatible data: string keys, and only the value types JSON has."""
    if isinstance(value, dict):
        return {str(key): _plain(item, where=where) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item, where=where) for item in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise ManifestError(f"{where}: a value of YAML type {type(value).__name__} has no JSON form")


def _describe(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a " + type(value).__name__


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)
