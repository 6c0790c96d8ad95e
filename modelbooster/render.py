"""`modelbooster render -f FILE|-`: the children a ModelBooster would get, offline.

Each ModelBooster in the file is defaulted and validated exactly as admission would do it, then synthesized
with the same function the reconciler uses; the children are printed as a YAML stream (or a JSON `List`) in
the reconciler's order. Nothing is printed on stdout unless every ModelBooster renders, so
`modelbooster render -f x.yaml | kubectl apply -f -` never applies half a model.

`--generation` picks the shape of Kthena's child CRDs the children are for (shared/autoscaling_generations.py):
`v0.1` (default: the child CRDs this chart ships, Kthena v0.1.0's), `v0.2` (Kthena v0.2.0 to v0.4.0) or `v1.0`
(Kthena v1.0.0: no AutoscalingPolicyBinding; the policy holds the target). Fields that generation's CRDs do not
declare are left out with a warning on stderr, as the reconciler does for the CRDs a cluster serves.

Exit codes: 0 rendered; 1 a ModelBooster is rejected (the webhook's message on stderr) or cannot be
synthesized; 2 the file or the arguments are unusable (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from modelbooster.gc_pause import cycle_collection_paused
from modelbooster.manifests import ManifestError, check_modelbooster_identity, load_documents, source_name
from modelbooster.yaml_dumper import dump_documents
from reconciler.modelbooster.synthesis import (
    DEFAULT_DOWNLOADER_IMAGE,
    DEFAULT_RUNTIME_IMAGE,
    SynthesisError,
    SynthesisSettings,
    synthesize,
)
from shared.autoscaling_generations import DEFAULT_GENERATION, UNDECLARED_FIELDS, Generation
from shared.defaults import apply_defaults
from shared.errors import ValidationFailed
from shared.validation import parse_defaulted

EXIT_RENDERED = 0
EXIT_INVALID = 1
EXIT_BAD_INPUT = 2

DEFAULT_NAMESPACE = "default"
# Children select and own by the ModelBooster's uid, which only the API server assigns.
PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"

PROG = "modelbooster render"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f", "--filename", required=True, metavar="FILE", help="ModelBooster manifest(s), YAML or JSON; - for stdin"
    )
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml", help="output format (yaml)")
    parser.add_argument(
        "-n",
        "--namespace",
        help=f"namespace of ModelBoosters that name none (default: {DEFAULT_NAMESPACE}); "
        "one that names another is an error, as with kubectl",
    )
    parser.add_argument(
        "--generation",
        choices=[generation.value for generation in Generation],
        default=DEFAULT_GENERATION.value,
        help="shape of Kthena's child CRDs in the target cluster: v0.1 (the CRDs this chart ships, Kthena v0.1.0), "
        f"v0.2 (Kthena v0.2.0-v0.4.0), v1.0 (Kthena v1.0.0) (default: {DEFAULT_GENERATION.value})",
    )
    parser.add_argument(
        "--runtime-image", default=DEFAULT_RUNTIME_IMAGE, help=f"runtime sidecar image ({DEFAULT_RUNTIME_IMAGE})"
    )
    parser.add_argument(
        "--downloader-image",
        default=DEFAULT_DOWNLOADER_IMAGE,
        help=f"model downloader image ({DEFAULT_DOWNLOADER_IMAGE})",
    )


class _RenderFailed(Exception):
    """A ModelBooster that admission rejects or synthesis cannot build; the message is what to print."""


def run(args: argparse.Namespace) -> int:
    with cycle_collection_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    settings = SynthesisSettings(runtime_image=args.runtime_image, downloader_image=args.downloader_image)
    generation = Generation(args.generation)
    try:
        documents = _load_modelboosters(args.filename, namespace=args.namespace)
    except ManifestError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    several = len(documents) > 1
    children: list[dict[str, Any]] = []
    status = EXIT_RENDERED
    for number, document in enumerate(documents, start=1):
        label = f"document {number} ({_display_name(document)})"
        try:
            children.extend(
                _render_one(document, settings=settings, generation=generation, label=label if several else "")
            )
        except _RenderFailed as error:
            status = EXIT_INVALID
            print(str(error), file=sys.stderr)
    if status == EXIT_RENDERED:
        sys.stdout.write(format_children(children, output=args.output))
    return status


def _render_one(
    document: dict[str, Any], *, settings: SynthesisSettings, generation: Generation, label: str
) -> list[dict[str, Any]]:
    prefix = f"{label}: " if label else ""
    defaulted = apply_defaults(document)
    for warning in defaulted.warnings:
        print(f"Warning: {prefix}{warning}", file=sys.stderr)
    try:
        booster = parse_defaulted(defaulted.obj)
    except ValidationFailed as error:
        raise _RenderFailed(f"{label}:\n{error}" if label else str(error)) from None
    try:
        children = synthesize(booster, settings, generation=generation)
    except SynthesisError as error:
        raise _RenderFailed(f"{PROG}: {prefix}{error}") from None
    return _without_undeclared(children, generation=generation, prefix=prefix)


def _without_undeclared(children: list[dict[str, Any]], *, generation: Generation, prefix: str) -> list[dict[str, Any]]:
    """Drop what the generation's CRDs do not declare (the API server would), saying so once per kind and field."""
    warned: set[tuple[str, tuple[str, ...]]] = set()
    for child in children:
        kind = str(child.get("kind"))
        for path in UNDECLARED_FIELDS[generation].get(kind, ()):
            node: Any = child
            for step in path[:-1]:
                node = node.get(step) if isinstance(node, dict) else None
            if not isinstance(node, dict) or path[-1] not in node:
                continue
            del node[path[-1]]
            if (kind, path) not in warned:
                warned.add((kind, path))
                print(
                    f"Warning: {prefix}{'.'.join(path)} of {kind} is not in the CRD of {generation.releases}; "
                    "left out (the API server would drop it)",
                    file=sys.stderr,
                )
    return children


def _load_modelboosters(source: str, *, namespace: str | None) -> list[dict[str, Any]]:
    documents = load_documents(source)
    for number, document in enumerate(documents, start=1):
        where = f"{source_name(source)}: document {number}: "
        check_modelbooster_identity(document, where=where)
        _place(document, namespace=namespace, where=where)
    return documents


def _place(document: dict[str, Any], *, namespace: str | None, where: str) -> None:
    """Give the ModelBooster the namespace and uid the API server would have."""
    metadata = document.get("metadata")
    if metadata is None:
        metadata = document["metadata"] = {}
    if not isinstance(metadata, dict):
        raise ManifestError(f"{where}metadata is not an object")
    own = metadata.get("namespace")
    if own and namespace and own != namespace:
        raise ManifestError(
            f'{where}the namespace from the object "{own}" does not match the namespace "{namespace}" '
            "given with --namespace"
        )
    metadata["namespace"] = own or namespace or DEFAULT_NAMESPACE
    if not metadata.get("uid"):
        metadata["uid"] = PLACEHOLDER_UID


def _display_name(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f'ModelBooster "{name}"' if isinstance(name, str) and name else "ModelBooster (no name)"


# --- output ---------------------------------------------------------------------------------------------------


def format_children(children: Sequence[dict[str, Any]], *, output: str) -> str:
    """The children as a YAML stream (`---` between documents) or as one JSON `v1` List."""
    if output == "json":
        body = {"apiVersion": "v1", "kind": "List", "items": list(children)}
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    return dump_documents(children)
