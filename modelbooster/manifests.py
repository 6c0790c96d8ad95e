"""Reading manifest files (YAML or JSON, one or many documents) for the offline commands.

Every problem with the input itself — missing, too large, binary, not YAML, empty, past a bound of
`modelbooster.yaml_loader`, a document that is not an object, the wrong kind — is a `ManifestError` whose
message is one line naming the file (and document) at fault. A file and the same bytes on stdin give the same
message: both are read as bytes, at most `ReadLimits.max_bytes` of them, and judged the same way.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from modelbooster.sources import STDIN, ByteBudget, SourceError, SourceLimits, expand_sources
from modelbooster.yaml_loader import DEFAULT_LIMITS, ReadLimits, YAMLInputError, load_stream
from shared.constants import (
    KIND_AUTOSCALING_POLICY,
    KIND_AUTOSCALING_POLICY_BINDING,
    KIND_MODEL_BOOSTER,
    KIND_MODEL_SERVING,
    WORKLOAD_API_VERSION,
    WORKLOAD_GROUP,
)
from shared.spelling import closest, did_you_mean

EXPECTED = "expected YAML or JSON objects"
# The kinds of the workload group: any other kind written with its apiVersion is a misspelling, never a kind of
# another tool to pass over (the API server would answer "no matches for kind").
WORKLOAD_KINDS = (KIND_MODEL_BOOSTER, KIND_MODEL_SERVING, KIND_AUTOSCALING_POLICY, KIND_AUTOSCALING_POLICY_BINDING)
# `-f https://...`: kubectl fetches it; we read files only, and say so rather than "no such file".
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


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
    # One line per unusable document (its kind or apiVersion wrong, a second copy that differs, ...).
    unusable: list[str] = field(default_factory=list)
    status_ignored: int = 0  # objects read with a `status` (`kubectl get -o yaml`), which was dropped
    repeated: int = 0  # documents that repeat an earlier one exactly, judged once

    def notes(self, *, prog: str) -> list[str]:
        """The lines to print on stderr about what was passed over."""
        lines = [note for note in (self.skipped_note(prog=prog),) if note]
        if self.status_ignored:
            objects = "object" if self.status_ignored == 1 else "objects"
            lines.append(
                f"{prog}: ignored the status of {self.status_ignored} {objects} (controllers write it; the API "
                "server ignores it on create)"
            )
        if self.repeated:
            documents = "document repeats" if self.repeated == 1 else "documents repeat"
            lines.append(f"{prog}: {self.repeated} {documents} an earlier one exactly; each object is judged once")
        return lines

    def skipped_note(self, *, prog: str) -> str | None:
        """One line saying what was passed over, or None when nothing was."""
        count = sum(self.skipped.values())
        if not count:
            return None
        kinds = ", ".join(f"{number} {kind}" for kind, number in sorted(self.skipped.items()))
        noun = "document" if count == 1 else "documents"
        return f"{prog}: skipped {count} {noun} of other kinds ({kinds}); --other-kinds=error refuses them"


def load_manifests(arguments: Sequence[str], *, source_limits: SourceLimits | None = None) -> list[Manifest]:
    """Every object of every input the `-f` arguments name (see modelbooster/sources.py), in order; the first
    unusable input is a ManifestError."""
    manifests, unusable = load_each(arguments, source_limits=source_limits)
    if unusable:
        raise ManifestError(unusable[0])
    return manifests


def load_each(
    arguments: Sequence[str],
    *,
    recursive: bool = False,
    stdin: BinaryIO | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
    source_limits: SourceLimits | None = None,
) -> tuple[list[Manifest], list[str]]:
    """The objects of every usable input, and one line for each input that is not, so that one unusable file does
    not hide the verdicts on the others. Arguments that cannot be expanded (stdin twice, too many files) are a
    ManifestError: nothing is read then."""
    source_limits = source_limits or SourceLimits()
    try:
        sources = expand_sources(arguments, recursive=recursive, limits=source_limits)
    except SourceError as error:
        raise ManifestError(str(error)) from None
    budget = ByteBudget(source_limits)
    manifests: list[Manifest] = []
    unusable: list[str] = []
    for source in sources:
        try:
            manifests.extend(_load_source(source, stdin=stdin, limits=limits, budget=budget))
        except (ManifestError, SourceError) as error:
            unusable.append(str(error))
    return manifests, unusable


def select(
    manifests: Sequence[Manifest],
    *,
    inferno_group: str | None,
    other_kinds: str = "skip",
    known_kinds: Mapping[str, Sequence[str]] | None = None,
    namespace: str | None = None,
) -> Selection:
    """ModelBoosters (checked to be of our apiVersion), the objects of `inferno_group` when given, and the count
    of the rest by kind; a document that cannot be used is a line in `unusable` (with `other_kinds="error"`, a
    document of another kind too). A kind a group of `known_kinds` does not have, written with that group's
    apiVersion, is a misspelling (the workload group's kinds are always known). `namespace` (`-n`) is given to
    the objects that name none. A `status` is dropped, and an object given twice is judged once. (The Inferno
    group comes from the caller: `render` has no use for the Inferno models and does not import them.)"""
    kinds_of = {WORKLOAD_GROUP: WORKLOAD_KINDS, **(known_kinds or {})}
    selection = Selection(modelboosters=[], inferno=[], skipped=Counter())
    seen: dict[tuple[str, str, str, str], Manifest] = {}
    for manifest in manifests:
        kind, api_version = manifest.obj.get("kind"), manifest.obj.get("apiVersion")
        group = api_version.split("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
        ours = not isinstance(kind, str) or not kind or kind == KIND_MODEL_BOOSTER
        problem: str | None = None
        if ours:
            problem = modelbooster_identity_problem(manifest.obj)
        elif group in kinds_of and kind not in kinds_of[group]:
            problem = _unknown_kind(str(kind), api_version=str(api_version), known=kinds_of[group])
        elif not (inferno_group and group == inferno_group):
            if other_kinds == "error":
                wanted = f"{KIND_MODEL_BOOSTER} or an Inferno kind" if inferno_group else KIND_MODEL_BOOSTER
                selection.unusable.append(f"{manifest.where}: kind is {_show(kind)}, expected {wanted}")
            else:
                selection.skipped[str(kind)] += 1
            continue
        problem = problem or _place(manifest.obj, namespace=namespace)
        if problem:
            selection.unusable.append(f"{manifest.where}: {problem}")
            continue
        if "status" in manifest.obj:
            del manifest.obj["status"]
            selection.status_ignored += 1
        key = _identity(manifest.obj)
        first = seen.setdefault(key, manifest) if key[3] else manifest  # nameless: each is refused on its own
        if first is not manifest:
            if first.obj == manifest.obj:
                selection.repeated += 1
            else:
                selection.unusable.append(
                    f"{manifest.where}: {display_name(manifest.obj, kind=key[0])} again, with other content than "
                    f"{first.where}; an object can be given once (kubectl apply would keep only the last)"
                )
            continue
        (selection.modelboosters if ours else selection.inferno).append(manifest)
    return selection


def _unknown_kind(kind: str, *, api_version: str, known: Sequence[str]) -> str:
    meant = closest(kind, known)
    hint = did_you_mean(meant) if meant else f"its kinds are {', '.join(known)}"
    return f'kind "{kind}" is not served by {api_version}; {hint}'


def _place(obj: dict[str, Any], *, namespace: str | None) -> str | None:
    """Give an object that names no namespace the one of `-n`; why it cannot be used, or None."""
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = obj["metadata"] = {}
    if not isinstance(metadata, dict):
        return "metadata is not an object"
    own = metadata.get("namespace")
    if own and namespace and own != namespace:
        return (
            f'the namespace from the object "{own}" does not match the namespace "{namespace}" given with '
            "--namespace"
        )
    if namespace and not own:
        metadata["namespace"] = namespace
    return None


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    api_version = str(obj.get("apiVersion") or "")
    return (
        str(obj.get("kind") or KIND_MODEL_BOOSTER),
        api_version.split("/", 1)[0],
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
    )


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
    problem = modelbooster_identity_problem(document)
    if problem:
        raise ManifestError(f"{where}{problem}")


def modelbooster_identity_problem(document: Mapping[str, Any]) -> str | None:
    """Why the document is not a ModelBooster of our API version, or None."""
    kind = document.get("kind")
    if kind != KIND_MODEL_BOOSTER:
        shown = "missing" if kind is None else f"{_show(kind)}"
        return f"kind is {shown}, expected {KIND_MODEL_BOOSTER}"
    api_version = document.get("apiVersion")
    if api_version != WORKLOAD_API_VERSION:
        shown = "missing" if api_version is None else f"{_show(api_version)}"
        return f"apiVersion is {shown}, expected {WORKLOAD_API_VERSION}"
    return None


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
        if _URL.match(source):
            raise ManifestError(
                f"{name}: is a URL, and only files, directories and - (stdin) are read; fetch it first: "
                f"curl -fsSL '{name}' | ... -f -"
            ) from None
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
