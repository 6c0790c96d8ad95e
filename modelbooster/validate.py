"""`modelbooster validate -f FILE|-`: the admission checks, offline.

Each ModelBooster in the file is defaulted (as the mutating webhook would) and validated (as the validating
webhook would); with `--old`, as an UPDATE of the stored object, so unchanged fields that no longer pass are
warnings, not errors. Exit codes: 0 all valid; 1 at least one is rejected (the webhook's message is printed on
stderr); 2 the file itself is unusable (missing, not YAML, empty, wrong kind or apiVersion), with a
one-line reason. Defaulting notes are printed as `Warning: ...` lines on stderr, like kubectl does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from modelbooster.manifests import ManifestError, check_modelbooster_identity, load_documents, source_name
from shared.defaults import apply_defaults
from shared.errors import format_denial
from shared.ratchet import carried_warnings
from shared.validation import validate_modelbooster, validate_update

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f", "--filename", required=True, metavar="FILE", help="ModelBooster manifest(s), YAML or JSON; - for stdin"
    )
    parser.add_argument(
        "-o", "--output", choices=("yaml", "json"), help="print the defaulted object(s) of the valid documents"
    )
    parser.add_argument(
        "--old",
        metavar="FILE",
        help="the stored object(s), to run the UPDATE checks as well (matched by namespace and name)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        documents = _load_modelboosters(args.filename)
        old_documents = _load_modelboosters(args.old) if args.old else []
    except ManifestError as error:
        print(f"modelbooster validate: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    old_by_key = {_key(document): document for document in old_documents}
    several = len(documents) > 1
    valid: list[dict[str, Any]] = []
    status = EXIT_VALID
    for number, document in enumerate(documents, start=1):
        header = f"document {number} ({_display_name(document)})"
        label = f"{header}: " if several else ""
        defaulted = apply_defaults(document)
        for warning in defaulted.warnings:
            print(f"Warning: {label}{warning}", file=sys.stderr)
        old = old_by_key.get(_key(document))
        if old is None:
            errors = validate_modelbooster(defaulted.obj)
        else:
            verdict = validate_update(defaulted.obj, old=old)
            errors = verdict.errors
            for warning in carried_warnings(verdict.carried):
                print(f"Warning: {label}{warning}", file=sys.stderr)
        if errors:
            status = EXIT_INVALID
            if several:
                print(f"{header}:", file=sys.stderr)
            print(format_denial(errors), file=sys.stderr)
            continue
        valid.append(defaulted.obj)
        if args.output is None:
            print(f"{_display_name(document)}: valid")
    if args.output is not None and valid:
        sys.stdout.write(_render(valid, output=args.output))
    return status


def _load_modelboosters(source: str) -> list[dict[str, Any]]:
    documents = load_documents(source)
    for number, document in enumerate(documents, start=1):
        check_modelbooster_identity(document, where=f"{source_name(source)}: document {number}: ")
    return documents


def _metadata(document: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = document.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _key(document: Mapping[str, Any]) -> tuple[str, str]:
    metadata = _metadata(document)
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def _display_name(document: Mapping[str, Any]) -> str:
    name = _metadata(document).get("name")
    return f'ModelBooster "{name}"' if isinstance(name, str) and name else "ModelBooster (no name)"


def _render(objects: Sequence[dict[str, Any]], *, output: str) -> str:
    if output == "json":
        body: object = objects[0] if len(objects) == 1 else {"apiVersion": "v1", "kind": "List", "items": objects}
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    return "---\n".join(yaml.safe_dump(obj, sort_keys=False, allow_unicode=True) for obj in objects)
