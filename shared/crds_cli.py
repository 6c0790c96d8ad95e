"""`modelbooster crds`: print (or write) the CRD manifests generated from the models."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from shared.crds import KINDS, crds, file_name, to_yaml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml", help="stdout format (default: yaml)"
    )
    parser.add_argument(
        "--write",
        metavar="DIR",
        help="write one <group>_<plural>.yaml per CRD into DIR (e.g. charts/modelbooster/crds) instead of printing; "
        "generated files of our groups that no longer correspond to a kind are removed",
    )


def run(args: argparse.Namespace) -> int:
    definitions = crds()
    if args.write:
        try:
            for path in write(Path(args.write)):
                print(path)
        except OSError as error:
            print(f"modelbooster crds: cannot write {args.write}: {error.strerror or error}", file=sys.stderr)
            return 2
        return 0
    if args.output == "json":
        listing = {"apiVersion": "v1", "kind": "List", "items": definitions}
        sys.stdout.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("---\n".join(to_yaml(definition) for definition in definitions))
    return 0


def write(directory: Path) -> list[Path]:
    """Write every CRD file into `directory`; remove stale ones of our groups. Returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for definition in crds():
        path = directory / file_name(definition)
        text = to_yaml(definition)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    groups = {kind.group for kind in KINDS}
    for path in directory.glob("*.yaml"):
        if path not in written and path.name.split("_", 1)[0] in groups:
            path.unlink()
    return written
