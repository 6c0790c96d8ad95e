"""`modelbooster validate -f FILE|DIR|- ...`: the admission checks, offline.

Each ModelBooster read is defaulted (as the mutating webhook would) and validated (as the validating
webhook would); with `--old`, as an UPDATE of the stored object, so unchanged fields that no longer pass are
warnings, not errors. Inferno objects (`inferno.platform.ai`) get the checks the reconciler's Inferno
controller applies (shared/inferno_validation.py): each object against its model, then the objects of each
namespace together (names unique, every Server's class, model and accelerator defined among them).
Documents of other kinds are skipped and counted on stderr (`--other-kinds=error` refuses them); a kind our
groups do not have (`ModelBoster`) is an unusable document, with a did-you-mean. Every input is judged, even when
another is unusable; the exit code is the worst verdict. A `status` (`kubectl get -o yaml`) is ignored, said once;
an object given twice is judged once (refused when the copies differ). Two
ModelBoosters of one namespace whose children would have the same name cannot both be applied: the later one in
the input is rejected, naming the other (shared/name_collisions.py).

Exit codes: 0 all valid, and the reconciler acts on each; 1 at least one is rejected (the webhook's message is
printed on stderr); 2 an input itself is unusable (missing, not YAML, empty, a ModelBooster of another
apiVersion, past a bound on size, nesting, aliases or file count; or an `--old` file that is not exactly one
object of the same name), with a one-line reason; 3 none is rejected, but the reconciler will not act on one:
an UPDATE (`--old`) that admission lets through because it leaves fields that fail validation as they were
stored, which leaves the object `Failed` and its children untouched (a CI gate must not read that as "safe to
apply"). Defaulting notes are printed as `Warning: ...` lines on stderr, like kubectl does.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelbooster.gc_pause import cycle_collection_paused
from modelbooster.inputs import add_input_arguments, read_inputs
from modelbooster.manifests import (
    Manifest,
    ManifestError,
    display_name,
    load_manifests,
    select,
    several_namespaces,
    source_name,
)
from modelbooster.output import OUTPUT_FORMATS, denial_status, format_objects, invalid_status
from shared.api import inferno as inferno_api
from shared.api.modelbooster import ModelBooster
from shared.decoding import decode, without_status
from shared.defaults import Defaulted, apply_defaults
from shared.errors import FieldError, format_denial
from shared.inferno_validation import InfernoIssue, InfernoObjectError, parse_inferno_object, validate_inferno_objects
from shared.name_collisions import Member, collisions
from shared.ratchet import carried_warnings
from shared.validation import name_given, validate_modelbooster, validate_update

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_RECONCILED = 3
EXIT_CODES = {
    EXIT_VALID: "every object is valid, and the reconciler acts on each",
    EXIT_INVALID: "an object is rejected (the webhook's message on stderr)",
    EXIT_BAD_INPUT: "an input or an argument is unusable (one line on stderr)",
    EXIT_NOT_RECONCILED: "none is rejected, but the reconciler will not act on one: an update (--old) keeps fields "
    "that fail validation unchanged, so the object stays Failed and its children untouched",
}
# What the reconciler does with an object admitted only because its failing fields are unchanged.
NOT_RECONCILED = (
    "admitted, but not reconciled: it keeps {count} unchanged from the stored object that {verb} validation, so the "
    "reconciler marks it Failed and leaves its children as they are until {pronoun} removed or fixed"
)

PROG = "modelbooster validate"
# The exit code of a run is its worst verdict: an unusable input, then a rejection, then an object the reconciler
# will not act on, then a valid one.
_SEVERITY = (EXIT_VALID, EXIT_NOT_RECONCILED, EXIT_INVALID, EXIT_BAD_INPUT)
INFERNO_KINDS = {
    inferno_api.GROUP: (
        inferno_api.KIND_ACCELERATOR,
        inferno_api.KIND_MODEL,
        inferno_api.KIND_SERVICE_CLASS,
        inferno_api.KIND_SERVER,
        inferno_api.KIND_CAPACITY,
        inferno_api.KIND_OPTIMIZER,
    )
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser, what="ModelBooster and Inferno manifests")
    parser.add_argument(
        "-n",
        "--namespace",
        help="namespace of the objects that name none; one that names another is an error, as with kubectl",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS,
        help="print a report: the admitted objects (ModelBoosters defaulted) and, for each rejected one, a v1 Status "
        "as the API server answers (yaml, json; for programs, not for kubectl apply), or the names of the admitted "
        "objects (name)",
    )
    parser.add_argument(
        "--old",
        metavar="FILE",
        help="the stored ModelBooster (one object), to run the UPDATE checks as well on the document of FILE "
        "with its name (and namespace, when both give one); fields that fail but are unchanged are admitted, "
        "and exit with 3: the reconciler leaves such an object Failed",
    )


def run(args: argparse.Namespace) -> int:
    with cycle_collection_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        manifests, selection = read_inputs(args, inferno_group=inferno_api.GROUP, known_kinds=INFERNO_KINDS)
        old = _load_old(args.old, new=[m.obj for m in selection.modelboosters]) if args.old else None
    except ManifestError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # An unusable input is reported, and every other one still judged (the exit code is the worst verdict).
    for problem in selection.unusable:
        print(f"{PROG}: {problem}", file=sys.stderr)
    for note in selection.notes(prog=PROG):
        print(note, file=sys.stderr)
    checked = len(selection.modelboosters) + len(selection.inferno) + len(selection.unusable)
    labels = _Labels(
        manifests,
        several=checked > 1,
        namespaced=several_namespaces([*selection.modelboosters, *selection.inferno]),
    )
    printed: dict[int, dict[str, Any]] = {}  # by position in the input, so output keeps the input's order
    position = {id(manifest): index for index, manifest in enumerate(manifests)}
    verdicts: list[int] = [EXIT_BAD_INPUT if selection.unusable else EXIT_VALID]
    checks = [_check_modelbooster(manifest, old=old) for manifest in selection.modelboosters]
    _add_collisions(checks, labels=labels)
    for check in checks:
        verdict, result = _report_modelbooster(check, labels=labels, output=args.output)
        verdicts.append(verdict)
        printed[position[id(check.manifest)]] = result
    for manifest, result in _validate_inferno(selection.inferno, labels=labels, output=args.output):
        verdicts.append(EXIT_INVALID if result.get("kind") == "Status" else EXIT_VALID)
        printed[position[id(manifest)]] = result
    if args.output is not None:
        objects = [printed[index] for index in sorted(printed)]
        if args.output == "name":
            objects = [obj for obj in objects if obj.get("kind") != "Status"]
        if objects:
            sys.stdout.write(format_objects(objects, output=args.output))
    return max(verdicts, key=_SEVERITY.index)


class _Labels:
    """How a document is named in messages: `document 2 (ModelBooster "m")`, with the file when there are
    several inputs; nothing when only one object is checked."""

    def __init__(self, manifests: Sequence[Manifest], *, several: bool, namespaced: bool) -> None:
        self.several = several
        self.namespaced = namespaced
        self.one_source = len({manifest.source for manifest in manifests}) <= 1

    def display(self, obj: Mapping[str, Any], *, kind: str = "ModelBooster") -> str:
        return display_name(obj, kind=kind, namespaced=self.namespaced)

    def header(self, manifest: Manifest, *, kind: str = "ModelBooster") -> str:
        where = manifest.where.split(": ", 1)[1] if self.one_source else manifest.where
        return f"{where} ({self.display(manifest.obj, kind=kind)})"

    def prefix(self, manifest: Manifest, *, kind: str = "ModelBooster") -> str:
        return f"{self.header(manifest, kind=kind)}: " if self.several else ""


@dataclass
class _Checked:
    """A ModelBooster document as admission sees it: defaulted, then validated (as an UPDATE with `--old`)."""

    manifest: Manifest
    defaulted: Defaulted
    errors: list[FieldError]
    carried: list[FieldError] = field(default_factory=list)


def _check_modelbooster(manifest: Manifest, *, old: Mapping[str, Any] | None) -> _Checked:
    defaulted = apply_defaults(manifest.obj)
    # The API server refuses an object without a name before admission: the webhook's rules never see it.
    unnamed = list(name_given(_metadata(manifest.obj)))
    stored = old if old is not None and _same_object(old, manifest.obj) else None
    if stored is None:
        return _Checked(manifest, defaulted, errors=[*unnamed, *validate_modelbooster(defaulted.obj)])
    verdict = validate_update(defaulted.obj, old=stored)
    return _Checked(manifest, defaulted, errors=[*unnamed, *verdict.errors], carried=verdict.carried)


def _add_collisions(checks: Sequence[_Checked], *, labels: _Labels) -> None:
    """Refuse a ModelBooster whose children would take names an earlier one of the input generates, as the
    cluster would when both are applied (shared/name_collisions.py). Only those the reconciler acts on count."""
    members: list[tuple[_Checked, Member]] = []
    for check in checks:
        if check.errors or check.carried:
            continue
        booster, _ = decode(ModelBooster, check.defaulted.obj)
        if booster is not None:
            namespace = booster.metadata.namespace or ""
            members.append((check, Member(namespace=namespace, display=labels.display(check.manifest.obj),
                                          booster=booster)))  # fmt: skip
    for (check, _), errors in zip(members, collisions([member for _, member in members]), strict=True):
        check.errors.extend(errors)


def _report_modelbooster(check: _Checked, *, labels: _Labels, output: str | None) -> tuple[int, dict[str, Any]]:
    """Print what admission would say; the verdict (an exit code) and the object `-o` prints: the defaulted one,
    or a Status when rejected."""
    manifest, document = check.manifest, check.manifest.obj
    label = labels.prefix(manifest)
    for warning in [*check.defaulted.warnings, *carried_warnings(check.carried)]:
        print(f"Warning: {label}{warning}", file=sys.stderr)
    if check.errors:
        print(f"{labels.header(manifest) if labels.several else labels.display(document)}:", file=sys.stderr)
        print(format_denial(check.errors), file=sys.stderr)
        return EXIT_INVALID, denial_status(document, display=labels.display(document), errors=check.errors)
    if check.carried:
        if output is None:
            print(f"{labels.display(document)}: {_not_reconciled(len(check.carried))}")
        return EXIT_NOT_RECONCILED, check.defaulted.obj
    if output is None:
        print(f"{labels.display(document)}: valid")
    return EXIT_VALID, check.defaulted.obj


def _not_reconciled(count: int) -> str:
    if count == 1:
        return NOT_RECONCILED.format(count="1 field", verb="fails", pronoun="it is")
    return NOT_RECONCILED.format(count=f"{count} fields", verb="fail", pronoun="they are")


def _validate_inferno(
    manifests: Sequence[Manifest], *, labels: _Labels, output: str | None
) -> list[tuple[Manifest, dict[str, Any]]]:
    """Each object against its model, then each namespace's objects together, as the Inferno controller does."""
    issues: dict[int, list[InfernoIssue]] = defaultdict(list)
    by_namespace: dict[str, list[tuple[Manifest, Any]]] = defaultdict(list)
    for manifest in manifests:
        try:
            typed = parse_inferno_object(without_status(manifest.obj))
        except InfernoObjectError as error:
            issues[id(manifest)].extend(error.issues)
            continue
        by_namespace[_namespace(manifest.obj)].append((manifest, typed))
    for members in by_namespace.values():
        report = validate_inferno_objects(
            accelerators=[t for _, t in members if isinstance(t, inferno_api.Accelerator)],
            models=[t for _, t in members if isinstance(t, inferno_api.Model)],
            service_classes=[t for _, t in members if isinstance(t, inferno_api.ServiceClass)],
            servers=[t for _, t in members if isinstance(t, inferno_api.Server)],
            capacities=[t for _, t in members if isinstance(t, inferno_api.Capacity)],
        )
        owners = {(manifest.obj.get("kind"), _name(manifest.obj)): manifest for manifest, _ in members}
        for issue in report.errors:
            owner = owners.get((issue.kind, issue.name))
            if owner is not None:
                issues[id(owner)].append(issue)
        for issue in report.warnings:
            owner = owners.get((issue.kind, issue.name))
            label = labels.prefix(owner, kind=issue.kind) if owner is not None else ""
            print(f"Warning: {label}{issue.path}: {issue.message}", file=sys.stderr)
    results: list[tuple[Manifest, dict[str, Any]]] = []
    for manifest in manifests:
        kind = str(manifest.obj.get("kind"))
        display = labels.display(manifest.obj, kind=kind)
        found = issues.get(id(manifest))
        if found:
            message = "\n".join(["validation failed:", *(f"  - {issue.path}: {issue.message}" for issue in found)])
            print(f"{labels.header(manifest, kind=kind) if labels.several else display}:", file=sys.stderr)
            print(message, file=sys.stderr)
            causes = [{"reason": "FieldValueInvalid", "message": issue.message, "field": issue.path} for issue in found]
            results.append((manifest, invalid_status(manifest.obj, display=display, message=message, causes=causes)))
            continue
        if output is None:
            print(f"{display}: valid")
        results.append((manifest, manifest.obj))
    return results


def _namespace(obj: Mapping[str, Any]) -> str:
    return str(_metadata(obj).get("namespace") or "")


def _name(obj: Mapping[str, Any]) -> str:
    return str(_metadata(obj).get("name") or "<unnamed>")


def _load_old(source: str, *, new: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The one stored object, which must be the same ModelBooster as a document being validated."""
    selection = select(load_manifests([source]), inferno_group=None, other_kinds="error")
    if selection.unusable:
        raise ManifestError(selection.unusable[0])
    documents = [m.obj for m in selection.modelboosters]
    name = source_name(source)
    if len(documents) != 1:
        raise ManifestError(f"{name}: holds {len(documents)} objects, expected exactly one (the stored ModelBooster)")
    (old,) = documents
    if not any(_same_object(old, document) for document in new):
        raise ManifestError(
            f"{name}: the stored object is {display_name(old)}, which is not among the objects validated"
        )
    return old


def _same_object(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    # A file written for `kubectl apply -n NS` often names no namespace; the stored object always does.
    old_namespace, old_name = _key(old)
    new_namespace, new_name = _key(new)
    return old_name == new_name and (old_namespace == new_namespace or not old_namespace or not new_namespace)


def _metadata(document: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = document.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _key(document: Mapping[str, Any]) -> tuple[str, str]:
    metadata = _metadata(document)
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
