"""The input options `render` and `validate` share: `-f` (repeatable), `-R`, `--other-kinds`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from modelbooster.manifests import Manifest, Selection, load_each, select

OTHER_KINDS = ("skip", "error")


def add_input_arguments(parser: argparse.ArgumentParser, *, what: str) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help=f"{what}: a YAML or JSON file, a directory of *.yaml/*.yml/*.json files, or - for stdin; "
        "repeat -f to read several (every one is checked)",
    )
    parser.add_argument(
        "-R", "--recursive", action="store_true", help="read the directories given with -f and their subdirectories"
    )
    parser.add_argument(
        "--other-kinds",
        choices=OTHER_KINDS,
        default="skip",
        help="documents of other kinds (a Service in `kustomize build` output): skip them and say how many "
        "(default), or refuse the input (exit 2)",
    )


def read_inputs(
    args: argparse.Namespace, *, inferno_group: str | None, known_kinds: Mapping[str, Sequence[str]] | None = None
) -> tuple[list[Manifest], Selection]:
    """Every object read, and those the command acts on; `Selection.unusable` says which inputs and documents
    cannot be used (a ManifestError only when the `-f` arguments themselves cannot be expanded)."""
    manifests, unusable = load_each(args.filename, recursive=args.recursive)
    selection = select(
        manifests,
        inferno_group=inferno_group,
        other_kinds=args.other_kinds,
        known_kinds=known_kinds,
        namespace=getattr(args, "namespace", None),
    )
    selection.unusable[:0] = unusable
    return manifests, selection
