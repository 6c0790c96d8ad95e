"""`modelbooster render -f FILE|DIR|- ...`: the children a ModelBooster would get, offline.

Each ModelBooster read is defaulted and validated exactly as admission would do it, then synthesized
with the same function the reconciler uses; the children are printed as a YAML stream (or a JSON `List`, or
their names) in the reconciler's order. No child is printed unless every ModelBooster renders, so
`modelbooster render -f x.yaml | kubectl apply -f -` never applies half a model. Whatever `-o` says, stdout holds
children only: a rejection is reported on stderr, never as an object in the stream, since a v1 Status piped into
`kubectl apply` is an object it tries to apply (`modelbooster validate -o json|yaml` is the report that holds
one Status per rejection). Documents of other kinds are skipped and counted on stderr (`--other-kinds=error`
refuses them). Every input is judged and reported even when another is unusable (then nothing is printed, and the
exit code is 2); inputs are read as `validate` reads them (modelbooster/manifests.py `select`).

`--generation` picks the shape of Kthena's child CRDs the children are for (shared/autoscaling_generations.py):
`v0.1` (the child CRDs this chart ships, Kthena v0.1.0's), `v0.2` (Kthena v0.2.0 to v0.4.0) or `v1.0` (Kthena
v1.0.0: no AutoscalingPolicyBinding; the policy holds the target); a release as users write it (`v0.3`, `1.0`)
names its generation. Without it, each ModelBooster is rendered for the generation whose shape it is written in
(`spec.backends` v0.1, a single backend with a replica range v0.2, with `replicas` v1.0: the cluster it was
written for), said on stderr. Fields that generation's CRDs do not declare are left out with a warning on stderr,
as the reconciler does for the CRDs a cluster serves.

Two ModelBoosters of one namespace whose children would have the same name (`qwen-fixed` with a backend `cpu`
and `qwen` with a backend `fixed-cpu`: both `qwen-fixed-cpu`) cannot both be applied: the later one in the input
is rejected, naming the other (shared/name_collisions.py).

Exit codes: 0 rendered; 1 a ModelBooster is rejected (the webhook's message on stderr; or its children's names
are another's of the input) or cannot be synthesized; 2 an input or the arguments are unusable (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

from modelbooster.gc_pause import cycle_collection_paused
from modelbooster.inputs import add_input_arguments, read_inputs
from modelbooster.manifests import Manifest, ManifestError, display_name, several_namespaces
from modelbooster.output import OUTPUT_FORMATS, format_objects
from reconciler.modelbooster.synthesis import (
    DEFAULT_DOWNLOADER_IMAGE,
    DEFAULT_RUNTIME_IMAGE,
    UNOWNED_PREFIX,
    SynthesisError,
    SynthesisSettings,
    synthesize,
    unowned_uid,
)
from shared.api.modelbooster import ModelBooster
from shared.autoscaling_generations import UNDECLARED_FIELDS, Generation, generation_of_release
from shared.backend_shape import COUNT_FIELD, SINGLE_FIELD
from shared.constants import LABEL_MODEL_UID
from shared.defaults import apply_defaults
from shared.errors import ValidationFailed, format_denial
from shared.name_collisions import Member, collisions
from shared.validation import parse_defaulted

EXIT_RENDERED = 0
EXIT_INVALID = 1
EXIT_BAD_INPUT = 2
EXIT_CODES = {
    EXIT_RENDERED: "every ModelBooster rendered",
    EXIT_INVALID: "a ModelBooster is rejected (the webhook's message on stderr) or cannot be synthesized",
    EXIT_BAD_INPUT: "an input or an argument is unusable (one line on stderr)",
}

DEFAULT_NAMESPACE = "default"
# Children select and own by the ModelBooster's uid, which only the API server assigns. Synthesis runs with this
# one when the input has none; the children printed then carry no owner reference and a stand-in (`_unowned`).
PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"

PROG = "modelbooster render"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser, what="ModelBooster manifests")
    parser.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS,
        help="output format (default: yaml); only children are printed, and none when a ModelBooster is rejected "
        "(the reason on stderr), so that `| kubectl apply -f -` applies all or nothing; for a Status per rejection, "
        "use validate -o json",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        help=f"namespace of ModelBoosters that name none (default: {DEFAULT_NAMESPACE}); "
        "one that names another is an error, as with kubectl",
    )
    parser.add_argument(
        "--generation",
        type=_generation,
        choices=[generation.value for generation in Generation],
        help="shape of Kthena's child CRDs in the target cluster: v0.1 (the CRDs this chart ships, Kthena v0.1.0), "
        "v0.2 (Kthena v0.2.0-v0.4.0), v1.0 (Kthena v1.0.0); a release as written (v0.3, 0.4.0, v1, 1.0) names "
        "its generation (default: the one whose ModelBooster shape the input has: spec.backends v0.1, "
        "spec.backend with minReplicas/maxReplicas v0.2, with replicas v1.0; said on stderr)",
    )
    parser.add_argument(
        "--runtime-image", default=DEFAULT_RUNTIME_IMAGE, help=f"runtime sidecar image ({DEFAULT_RUNTIME_IMAGE})"
    )
    parser.add_argument(
        "--downloader-image",
        default=DEFAULT_DOWNLOADER_IMAGE,
        help=f"model downloader image ({DEFAULT_DOWNLOADER_IMAGE})",
    )


def _generation(text: str) -> str:
    """A release as users type it, as the generation it belongs to (argparse then checks the choices)."""
    generation = generation_of_release(text)
    return generation.value if generation is not None else text


# The generation each ModelBooster shape was written for (shared/backend_shape.py), and how to say it.
_SHAPES: Final = {
    Generation.V0_1: "spec.backends",
    Generation.V0_2: "spec.backend with minReplicas and maxReplicas",
    Generation.V1_0: "spec.backend with replicas",
}


def fitting_generation(document: Mapping[str, Any]) -> Generation:
    """The generation of Kthena whose ModelBooster shape the document has: the cluster it was written for."""
    spec = document.get("spec")
    backend = spec.get(SINGLE_FIELD) if isinstance(spec, Mapping) else None
    if not isinstance(backend, Mapping):
        return Generation.V0_1
    return Generation.V1_0 if COUNT_FIELD in backend else Generation.V0_2


class _RenderFailed(Exception):
    """A ModelBooster that admission rejects or synthesis cannot build; the message is what to print."""


def run(args: argparse.Namespace) -> int:
    with cycle_collection_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    settings = SynthesisSettings(runtime_image=args.runtime_image, downloader_image=args.downloader_image)
    chosen = Generation(args.generation) if args.generation else None
    try:
        manifests, selection = read_inputs(args, inferno_group=None)
    except ManifestError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # Every input is judged and reported; stdout stays empty unless all of them render.
    for problem in selection.unusable:
        print(f"{PROG}: {problem}", file=sys.stderr)
    for note in selection.notes(prog=PROG):
        print(note, file=sys.stderr)
    namespaced = several_namespaces(selection.modelboosters)  # before placing: "default" is not a choice
    unowned = 0
    several = len(selection.modelboosters) + len(selection.unusable) > 1
    one_source = len({manifest.source for manifest in manifests}) <= 1
    children: list[dict[str, Any]] = []
    failed = False
    members: list[tuple[Member, str]] = []  # each ModelBooster that passed, and how messages name its document
    fitted: dict[Generation, list[str]] = {}  # without --generation: each generation chosen, for whom
    for manifest in selection.modelboosters:
        generation = chosen or fitting_generation(manifest.obj)
        where = manifest.where.split(": ", 1)[1] if one_source else manifest.where
        display = display_name(manifest.obj, namespaced=namespaced)
        label = f"{where} ({display})" if several else ""
        owned = bool(manifest.obj["metadata"].get("uid"))
        _place(manifest.obj)
        try:
            booster = _parse_one(manifest, label=label, name=label or display)
            rendered = _synthesize_one(booster, settings=settings, generation=generation, label=label)
            children.extend(rendered if owned else _unowned(rendered, booster=booster))
            unowned += not owned
        except _RenderFailed as error:
            failed = True
            print(str(error), file=sys.stderr)
            continue
        members.append((Member(namespace=str(booster.metadata.namespace), display=display, booster=booster), label))
        fitted.setdefault(generation, []).append(display)
    for (_, label), errors in zip(members, collisions([member for member, _ in members]), strict=True):
        if errors:
            failed = True
            print(f"{label}:\n{format_denial(errors)}", file=sys.stderr)
    if selection.unusable:
        return EXIT_BAD_INPUT
    if failed:
        return EXIT_INVALID
    if chosen is None:
        _say_generations(fitted)
    if unowned:
        print(UNOWNED_NOTE, file=sys.stderr)
    output = args.output or "yaml"
    if children or output == "json":
        sys.stdout.write(format_children(children, output=output))
    return EXIT_RENDERED


def _say_generations(fitted: Mapping[Generation, Sequence[str]]) -> None:
    """Which child CRDs the children were rendered for when `--generation` did not say, and why."""
    several = len(fitted) > 1
    for generation, displays in fitted.items():
        whom = f" for {', '.join(displays)}" if several else ""
        print(
            f"{PROG}: children{whom} for the child CRDs of {generation.releases} (--generation "
            f"{generation.value}), the generation whose ModelBooster shape the input has ({_SHAPES[generation]}); "
            "--generation picks another",
            file=sys.stderr,
        )
    if several:
        print(f"Warning: the inputs are written for {len(fitted)} generations of Kthena, and a cluster serves one; "
              "--generation renders them all for it", file=sys.stderr)  # fmt: skip


def _parse_one(manifest: Manifest, *, label: str, name: str) -> ModelBooster:
    """The ModelBooster defaulted and validated as admission would, or _RenderFailed with the webhook's message
    under `name` (even a single object is named: a pipeline's log shows which one failed)."""
    prefix = f"{label}: " if label else ""
    defaulted = apply_defaults(manifest.obj)
    for warning in defaulted.warnings:
        print(f"Warning: {prefix}{warning}", file=sys.stderr)
    try:
        return parse_defaulted(defaulted.obj)
    except ValidationFailed as error:
        raise _RenderFailed(f"{name}:\n{error}") from None


def _synthesize_one(
    booster: ModelBooster, *, settings: SynthesisSettings, generation: Generation, label: str
) -> list[dict[str, Any]]:
    prefix = f"{label}: " if label else ""
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


UNOWNED_NOTE = (
    f"{PROG}: no metadata.uid, so the children carry no owner reference (the garbage collector deletes children "
    f"whose owner does not exist) and {LABEL_MODEL_UID}: {UNOWNED_PREFIX}<digest>; once the ModelBooster is "
    "created, the reconciler adopts them: it adds its owner reference and uid label without restarting pods, and its "
    "ModelServer selects those pods by the stand-in until a rollout. Owned children from the start: kubectl get "
    "modelbooster NAME -o yaml | modelbooster render -f -"
)


def _unowned(children: list[dict[str, Any]], *, booster: ModelBooster) -> list[dict[str, Any]]:
    """The children of a ModelBooster the API server has not seen: without an owner reference (one naming a uid
    no object has is deleted by the garbage collector), and with a stand-in of the model's own for the uid in
    labels and selectors (a shared one would let one model's ModelServer select another's pods)."""
    standin = unowned_uid(str(booster.metadata.namespace), str(booster.metadata.name))
    for child in children:
        child["metadata"].pop("ownerReferences", None)
    return [_replaced(child, PLACEHOLDER_UID, standin) for child in children]


def _replaced(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {key: _replaced(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item, old, new) for item in value]
    return new if value == old else value


def _place(document: dict[str, Any]) -> None:
    """Give the ModelBooster the namespace (`-n` was given to those naming none) and uid the API server would."""
    metadata = document["metadata"]  # an object: checked when the inputs were read
    metadata["namespace"] = metadata.get("namespace") or DEFAULT_NAMESPACE
    if not metadata.get("uid"):
        metadata["uid"] = PLACEHOLDER_UID


# --- output ---------------------------------------------------------------------------------------------------


def format_children(children: Sequence[dict[str, Any]], *, output: str) -> str:
    """The children as a YAML stream (`---` between documents), as one JSON `v1` List, or their names."""
    return format_objects(children, output=output, always_list=True)
