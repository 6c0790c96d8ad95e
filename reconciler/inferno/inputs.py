"""A run's inputs: the namespace's Accelerators, Models, ServiceClasses, Servers and Capacities read from the
caches, validated together (shared.inferno_validation), and turned into the optimiser's system
(docs/design/inferno.md §2, §8)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from optimizer.system import System, system_from_resources
from reconciler.inferno.kinds import ACCELERATOR, CAPACITY, INFERNO_INPUT_KINDS, MODEL, SERVER, SERVICE_CLASS
from reconciler.inferno.solvers import REASON_INVALID, RunFailure
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text
from shared.api import inferno as api
from shared.decoding import without_status
from shared.inferno_validation import (
    InfernoIssue,
    InfernoObjectError,
    issues_from_validation_error,
    parse_inferno_object,
    validate_inferno_objects,
)

logger = logging.getLogger(__name__)


@dataclass
class Inputs:
    """What one run optimises, and what its later steps need of the inputs."""

    system: System
    servers: dict[str, dict[str, Any]]  # spec.name -> the Server object as cached
    objects: list[tuple[Kind, dict[str, Any]]] = field(default_factory=list)  # every input object, for status
    corrections: dict[str, api.ProfileCorrection] = field(default_factory=dict)  # Model name -> its setting
    saturation: dict[str, api.SaturationSpec] = field(default_factory=dict)  # ServiceClass name -> thresholds


def gather(informers: Mapping[Kind, Informer], namespace: str, optimizer: dict[str, Any]) -> Inputs:
    """The namespace's objects from the caches, validated, as one system; the flags are the triggering Optimizer's
    own (the reference took whichever Optimizer was listed first). An invalid object fails the run by name."""
    issues: list[InfernoIssue] = []
    parsed: dict[Kind, list[Any]] = {kind: [] for kind in INFERNO_INPUT_KINDS}
    objects: list[tuple[Kind, dict[str, Any]]] = []
    raw_servers: dict[str, dict[str, Any]] = {}
    for kind in INFERNO_INPUT_KINDS:
        for obj in sorted(informers[kind].objects(namespace), key=lambda obj: meta_text(obj, "name")):
            try:
                typed = parse_inferno_object(without_status(obj))
            except InfernoObjectError as error:
                issues.extend(error.issues)
                continue
            parsed[kind].append(typed)
            objects.append((kind, obj))
            if isinstance(typed, api.Server):
                raw_servers.setdefault(typed.spec.name, obj)
    flags: api.OptimizerSpec | None = None
    try:
        flags = api.Optimizer.model_validate(without_status(optimizer)).spec.data.optimizer
    except ValidationError as error:
        name = meta_text(optimizer, "name")
        issues.extend(issues_from_validation_error(kind=api.KIND_OPTIMIZER, name=name, error=error))
    if issues:
        raise RunFailure(REASON_INVALID, "; ".join(str(issue) for issue in issues), retryable=False)
    resources = {
        "accelerators": parsed[ACCELERATOR],
        "models": parsed[MODEL],
        "service_classes": parsed[SERVICE_CLASS],
        "servers": parsed[SERVER],
        "capacities": parsed[CAPACITY],
    }
    report = validate_inferno_objects(**resources)
    for warning in report.warnings:
        logger.info("inferno %s: %s", namespace, warning)
    if not report.ok:
        raise RunFailure(REASON_INVALID, report.summary(), retryable=False)
    system = system_from_resources(**resources, flags=flags)
    return Inputs(
        system=system,
        servers=raw_servers,
        objects=objects,
        corrections={
            model.spec.name: model.spec.profile_correction or api.DEFAULT_PROFILE_CORRECTION
            for model in parsed[MODEL]
        },
        saturation={c.spec.name: c.spec.saturation for c in parsed[SERVICE_CLASS] if c.spec.saturation is not None},
    )
