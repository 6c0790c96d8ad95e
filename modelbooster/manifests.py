"""Reading manifest files (YAML or JSON, one or many documents) for the offline commands.

Every problem with the input itself — missing, too large, binary, not YAML, empty, past a bound of
`modelbooster.yaml_loader`, a document that is not an object, the wrong kind — is a `ManifestError` whose
message is one line naming the file (and document) at fault. A file and the same bytes on stdin give the same
message: both are read as bytes, at most `ReadLimits.max_bytes` of them, and judged the same way.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from modelbooster.sources import STDIN, ByteBudget, SourceError, SourceLimits, expand_sources
from modelbooster.yaml_loader import DEFAULT_LIMITS, ReadLimits, YAMLInputError, load_stream
from shared.constants import KIND_MODEL_BOOSTER, WORKLOAD_API_VERSION

EXPECTED = "expected YAML or JSON objects"


class ManifestError(Exception):
    """A one-line reason why a manifest cannot be used."""


@dataclass(frozen=True)
class Manifest:
    """One object read from an input, and where it was read (for messages)."""

    source: str
    document: int  # 1-based, among the input's non-empty documents
    item: int | None  # 1-based position in a `kind: List` document
    obj: dict[str, Any]

    @property
    def where(self) -> str:
        item = f", item {self.item}" if self.item is not None else ""
        return f"{source_name(self.source)}: document {self.document}{item}"


@dataclass
class Selection:
    """The objects of the inputs sorted by what the offline commands do with them."""

    modelboosters: list[Manifest]
    inferno: list[Manifest]
    skipped: Counter[str]

    def skipped_note(self, *, prog: str) -> str | None:
        """One line saying what was passed over, or None when nothing was."""
        count = sum(self.skipped.values())
        if not count:
            return None
        kinds = ", ".join(f"{number} {kind}" for kind, number in sorted(self.skipped.items()))
        noun = "document" if count == 1 else "documents"
        return f"{prog}: skipped {count} {noun} of other kinds ({kinds}); --other-kinds=error refuses them"


def load_manifests(
    arguments: Sequence[str],
    *,
    recursive: bool = False,
    stdin: BinaryIO | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
    source_limits: SourceLimits | None = None,
) -> list[Manifest]:
    """Every object of every input the `-f` arguments name (see modelbooster/sources.py), in order."""
    source_limits = source_limits or SourceLimits()
    try:
        sources = expand_sources(arguments, recursive=recursive, limits=source_limits)
        budget = ByteBudget(source_limits)
        manifests: list[Manifest] = []
        for source in sources:
            manifests.extend(_load_source(source, stdin=stdin, limits=limits, budget=budget))
    except SourceError as error:
        raise ManifestError(str(error)) from None
    return manifests


def select(manifests: Sequence[Manifest], *, inferno_group: str | None, other_kinds: str = "skip") -> Selection:
    """ModelBoosters (checked to be of our apiVersion), the objects of `inferno_group` when given, and the count
    of the rest by kind; with `other_kinds="error"` the first of the rest is a ManifestError instead. (The group
    comes from the caller: `render` has no use for the Inferno models and does not import them.)"""
    selection = Selection(modelboosters=[], inferno=[], skipped=Counter())
    for manifest in manifests:
        kind, api_version = manifest.obj.get("kind"), manifest.obj.get("apiVersion")
        if not isinstance(kind, str) or not kind or kind == KIND_MODEL_BOOSTER:
            check_modelbooster_identity(manifest.obj, where=f"{manifest.where}: ")
            selection.modelboosters.append(manifest)
        elif inferno_group and isinstance(api_version, str) and api_version.split("/", 1)[0] == inferno_group:
            selection.inferno.append(manifest)
        elif other_kinds == "error":
            wanted = f"{KIND_MODEL_BOOSTER} or an Inferno kind" if inferno_group else KIND_MODEL_BOOSTER
            raise ManifestError(f"{manifest.where}: kind is {_show(kind)}, expected {wanted}")
        else:
            selection.skipped[kind] += 1
    return selection


def display_name(obj: Mapping[str, Any], *, kind: str = KIND_MODEL_BOOSTER, namespaced: bool = False) -> str:
    """`ModelBooster "llama"`; with `namespaced`, `ModelBooster "team-a/llama"` when the object names a
    namespace, for objects read from several namespaces (`kubectl get -A -o yaml`) to be told apart."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return f"{kind} (no name)"
    if namespaced and isinstance(namespace, str) and namespace:
        return f'{kind} "{namespace}/{name}"'
    return f'{kind} "{name}"'


def source_name(source: str) -> str:
    return "<stdin>" if source == STDIN else source


def several_namespaces(manifests: Sequence[Manifest]) -> bool:
    """Whether the objects name more than one namespace (then messages name each object's namespace)."""
    found = set()
    for manifest in manifests:
        metadata = manifest.obj.get("metadata")
        namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
        if isinstance(namespace, str) and namespace:  # none named: the one given with -n, or the default
            found.add(namespace)
    return len(found) > 1


def load_documents(
    source: str, *, stdin: BinaryIO | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> list[dict[str, Any]]:
    """The non-empty documents of a file (or `-` for stdin), each a JSON-compatible object.

    A `kind: List` document is replaced by its items, as kubectl does.
    """
    return [manifest.obj for manifest in _load_source(source, stdin=stdin, limits=limits, budget=None)]


def _load_source(
    source: str, *, stdin: BinaryIO | None, limits: ReadLimits, budget: ByteBudget | None
) -> list[Manifest]:
    name = source_name(source)
    data = _read(source, stdin=stdin, limit=limits.max_bytes)
    if budget is not None:
        budget.take(len(data), name=name)
    text = _text(data, name=name)
    try:
        raw = load_stream(text, limits=limits)
    except YAMLInputError as error:
        where = f"{name}: document {error.document}" if error.document is not None else name
        raise ManifestError(f"{where}: {error.problem}") from None
    documents: list[Manifest] = []
    for number, document in enumerate(raw, start=1):
        if not isinstance(document, dict):
            raise ManifestError(
                f"{name}: document {number} is {_describe(document)}, expected an object with apiVersion and kind"
            )
        if document.get("kind") == "List" and isinstance(document.get("items"), list):
            for item_number, item in enumerate(document["items"], start=1):
                if not isinstance(item, dict):
                    raise ManifestError(f"{name}: document {number}, item {item_number} is {_describe(item)}")
                documents.append(Manifest(source=source, document=number, item=item_number, obj=item))
        else:
            documents.append(Manifest(source=source, document=number, item=None, obj=document))
    if not documents:
        raise ManifestError(f"{name}: is empty (no documents, or only comments), {EXPECTED}")
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


def _read(source: str, *, stdin: BinaryIO | None, limit: int) -> bytes:
    name = source_name(source)
    try:
        if source == STDIN:
            stream = stdin if stdin is not None else _stdin()
            if stream is None:
                raise ManifestError(f"{name}: is closed, {EXPECTED}")
            data = stream.read(limit + 1)
        else:
            with Path(source).open("rb") as stream:
                data = stream.read(limit + 1)
    except FileNotFoundError:
        raise ManifestError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ManifestError(f"{name}: is a directory, expected a file") from None
    except PermissionError:
        raise ManifestError(f"{name}: permission denied") from None
    except OSError as error:
        raise ManifestError(f"{name}: cannot read: {error.strerror or error}") from None
    if len(data) > limit:
        raise ManifestError(f"{name}: is larger than {_size(limit)}, the most read from one input")
    return data


def _size(count: int) -> str:
    mebibyte = 1024 * 1024
    return f"{count // mebibyte} MiB" if count % mebibyte == 0 else f"{count:,} bytes"


def _stdin() -> BinaryIO | None:
    # None when the process was started with stdin closed; `buffer` is missing when it was replaced.
    return getattr(sys.stdin, "buffer", None)


def _text(data: bytes, *, name: str) -> str:
    # A NUL byte is valid UTF-8 but never in YAML text; it is how binary files (and UTF-16 text) look.
    if b"\x00" not in data:
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            pass
    raise ManifestError(f"{name}: is binary data, {EXPECTED} as UTF-8 text")


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
