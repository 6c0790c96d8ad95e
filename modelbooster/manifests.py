"""Reading manifest files (YAML or JSON, one or many documents) for the offline commands.

Every problem with the input itself — missing, too large, binary, not YAML, empty, past a bound of
`modelbooster.yaml_loader`, a document that is not an object, the wrong kind — is a `ManifestError` whose
message is one line naming the file (and document) at fault. A file and the same bytes on stdin give the same
message: both are read as bytes, at most `ReadLimits.max_bytes` of them, and judged the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from modelbooster.yaml_loader import DEFAULT_LIMITS, ReadLimits, YAMLInputError, load_stream
from shared.constants import KIND_MODEL_BOOSTER, WORKLOAD_API_VERSION

STDIN = "-"
EXPECTED = "expected YAML or JSON objects"


class ManifestError(Exception):
    """A one-line reason why a manifest cannot be used."""


def source_name(source: str) -> str:
    return "<stdin>" if source == STDIN else source


def load_documents(
    source: str, *, stdin: BinaryIO | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> list[dict[str, Any]]:
    """The non-empty documents of a file (or `-` for stdin), each a JSON-compatible object.

    A `kind: List` document is replaced by its items, as kubectl does.
    """
    name = source_name(source)
    text = _text(_read(source, stdin=stdin, limit=limits.max_bytes), name=name)
    try:
        raw = load_stream(text, limits=limits)
    except YAMLInputError as error:
        where = f"{name}: document {error.document}" if error.document is not None else name
        raise ManifestError(f"{where}: {error.problem}") from None
    documents: list[dict[str, Any]] = []
    for number, document in enumerate(raw, start=1):
        if not isinstance(document, dict):
            raise ManifestError(
                f"{name}: document {number} is {_describe(document)}, expected an object with apiVersion and kind"
            )
        if document.get("kind") == "List" and isinstance(document.get("items"), list):
            for item_number, item in enumerate(document["items"], start=1):
                if not isinstance(item, dict):
                    raise ManifestError(f"{name}: document {number}, item {item_number} is {_describe(item)}")
                documents.append(item)
        else:
            documents.append(document)
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
