"""`modelbooster crds`: print (or write) the CRD manifests generated from the models."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from shared.crds import KINDS, chart_files, crds, file_name, to_yaml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml", help="stdout format (default: yaml)"
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--write",
        metavar="DIR",
        help="write one <group>_<plural>.yaml per CRD into DIR instead of printing; "
        "generated files of our groups that no longer correspond to a kind are removed",
    )
    target.add_argument(
        "--chart",
        metavar="CHART_DIR",
        help="write the CRDs into the chart's layout (e.g. charts/modelbooster): crds/ for ModelBooster, "
        "charts/child-crds/crds/ for the child kinds, charts/inferno-crds/crds/ for Inferno's",
    )


def run(args: argparse.Namespace) -> int:
    definitions = crds()
    if args.write or args.chart:
        destination = args.write or args.chart
        try:
            written = write(Path(args.write)) if args.write else write_chart(Path(args.chart))
        except OSError as error:
            print(f"modelbooster crds: cannot write {destination}: {error.strerror or error}", file=sys.stderr)
            return 2
        for path in written:
            print(path)
        return 0
    if args.output == "json":
        listing = {"apiVersion": "v1", "kind": "List", "items": definitions}
        sys.stdout.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("---\n".join(to_yaml(definition) for definition in definitions))
    return 0


def write(directory: Path) -> list[Path]:
    """Write every CRD file into `directory`; remove stale ones of our groups. Returns the files written."""
    return _write_files({directory / file_name(definition): to_yaml(definition) for definition in crds()})


def write_chart(chart: Path) -> list[Path]:
    """Write every CRD where the chart keeps it; remove stale ones of our groups there."""
    return _write_files({chart / relative: text for relative, text in chart_files().items()})


def _write_files(files: dict[Path, str]) -> list[Path]:
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    groups = {kind.group for kind in KINDS}
    for directory in {path.parent for path in files}:
        for path in directory.glob("*.yaml"):
            if path not in files and path.name.split("_", 1)[0] in groups:
                path.unlink()
    return list(files)
