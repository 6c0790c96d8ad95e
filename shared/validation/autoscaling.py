"""Where autoscaling is set and what it requires: the replica bounds, the scale-to-zero grace periods, the
scope of model- and backend-level autoscaling (the reference's rules, docs/design/validation.md §4), and the
external-replicas opt-in (§6; shared/external_scaling.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from shared.api.modelbooster import ModelBackend, ModelBooster, ModelBoosterSpec
from shared.constants import MAX_REPLICAS, MAX_SCALE_TO_ZERO_GRACE_SECONDS
from shared.durations import format_duration, parse_duration
from shared.errors import FieldError, forbidden, invalid, required
from shared.external_scaling import ACCEPTED_VALUES as EXTERNAL_REPLICAS_VALUES
from shared.external_scaling import (
    ANNOTATION_EXTERNAL_REPLICAS,
    EXTERNAL_WITH_POLICY_DETAIL,
    NO_AUTOSCALING_DETAIL,
    replicas_set_externally,
)
from shared.validation.reads import EXTERNAL_REPLICAS_PATH, autoscaling_switches, reads

_MAX_GRACE_NANOS: Final = MAX_SCALE_TO_ZERO_GRACE_SECONDS * 1_000_000_000

COST_EXPANSION_WITHOUT_MODEL_LEVEL: Final = (
    "costExpansionRatePercent must not be provided when model-level autoscaling is not set"
)
MIN_ONE_WITH_BACKEND_LEVEL: Final = "minReplicas must be >= 1 when backend-level autoscaling is set"
# How those rules read for a single `spec.backend`, whose `spec.autoscalingPolicy` (Kthena v0.2-v0.4) is that
# backend's own (docs/design/api.md §8): "model-level" and "backend-level" name the list's two kinds.
SINGLE_WORDING: Final = {
    COST_EXPANSION_WITHOUT_MODEL_LEVEL: "costExpansionRatePercent must not be provided with a single spec.backend: "
    "it weighs the costs of several spec.backends under model-level autoscaling",
    MIN_ONE_WITH_BACKEND_LEVEL: "minReplicas must be >= 1 when spec.autoscalingPolicy is set: the autoscaler "
    "reads its metric from the backend's pods, and at zero there is none to scale up on",
}


def grace_periods(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        if backend.scale_to_zero_grace_period is None:
            continue
        nanos = parse_duration(backend.scale_to_zero_grace_period)
        if nanos > _MAX_GRACE_NANOS:
            detail = "scaleToZeroGracePeriod cannot exceed 1800 seconds"
        elif nanos < 0:
            detail = "scaleToZeroGracePeriod cannot be negative"
        else:
            continue
        yield invalid(f"spec.backends[{i}].scaleToZeroGracePeriod", format_duration(nanos), detail)


def replica_bounds(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    total = 0
    for i, backend in enumerate(backends):
        total += backend.max_replicas
        if backend.min_replicas > backend.max_replicas:
            error = invalid(
                f"spec.backends[{i}].minReplicas",
                backend.min_replicas,
                "minReplicas cannot be greater than maxReplicas",
            )
            yield reads(error, f"spec.backends[{i}].minReplicas", f"spec.backends[{i}].maxReplicas")
    if total > MAX_REPLICAS:
        yield invalid(
            "spec.backends", total, f"sum of maxReplicas across all backends ({total}) cannot exceed {MAX_REPLICAS}"
        )


def autoscaling_scope(model: ModelBooster) -> Iterator[FieldError]:
    """Model-level autoscaling, backend-level, neither, or (refused) both, and what each requires. Every rule
    here depends on where autoscaling is set, so each error also reads those switches (`autoscaling_switches`).
    """
    spec = model.spec
    model_level = spec.autoscaling_policy is not None
    backend_level = any(backend.autoscaling_policy is not None for backend in spec.backends)
    if not model_level:
        yield from _without_model_level(model, backend_level=backend_level)
    elif not backend_level:
        yield from _model_level(spec)
    else:
        # The reference named the fields `autoscalingPolicyRef` here; we use the real JSON names.
        error = forbidden(
            "spec.autoscalingPolicy",
            "spec.autoscalingPolicy and spec.backends[].autoscalingPolicy cannot both be set; "
            "choose model-level or backend-level autoscaling, not both",
        )
        yield reads(error, *autoscaling_switches(spec.backends))


def _without_model_level(model: ModelBooster, *, backend_level: bool) -> Iterator[FieldError]:
    spec = model.spec
    backends = spec.backends
    for i, backend in enumerate(backends):
        if backend.scaling_cost:
            error = forbidden(
                f"spec.backends[{i}].scalingCost",
                "cost must not be provided when model-level autoscaling is not set",
            )
            yield reads(error, error.path, "spec.autoscalingPolicy")
        if backend.scale_to_zero_grace_period is not None:
            error = forbidden(
                f"spec.backends[{i}].scaleToZeroGracePeriod",
                "scaleToZeroGracePeriod must not be provided when model-level autoscaling is not set",
            )
            yield reads(error, error.path, "spec.autoscalingPolicy")
    if spec.cost_expansion_rate_percent is not None:
        error = forbidden("spec.costExpansionRatePercent", COST_EXPANSION_WITHOUT_MODEL_LEVEL)
        yield reads(error, error.path, "spec.autoscalingPolicy")
    # A single backend's `spec.autoscalingPolicy` (Kthena v0.2-v0.4) may start from zero, as Kthena v0.4.0's
    # webhook admitted: the warning says what keeps it there (shared/external_scaling.py).
    single = spec.backend is not None
    for i, backend in enumerate(backends):
        if backend.autoscaling_policy is not None and backend.min_replicas < 1 and not single:
            error = invalid(
                f"spec.backends[{i}].minReplicas",
                backend.min_replicas,
                MIN_ONE_WITH_BACKEND_LEVEL,
            )
            yield reads(error, error.path, *autoscaling_switches(backends))
    # With the external-replicas opt-in something outside sets replicas between the bounds
    # (shared/external_scaling.py); the bounds must then only be in order, which the schema rule
    # minReplicas <= maxReplicas already says.
    if not backend_level and not replicas_set_externally(model.metadata.annotations):
        for i, backend in enumerate(backends):
            if backend.min_replicas != backend.max_replicas:
                value = f"minReplicas={backend.min_replicas}, maxReplicas={backend.max_replicas}"
                error = invalid(f"spec.backends[{i}]", value, NO_AUTOSCALING_DETAIL)
                bounds = (f"{error.path}.minReplicas", f"{error.path}.maxReplicas")
                yield reads(error, *bounds, *autoscaling_switches(backends), EXTERNAL_REPLICAS_PATH)


def _model_level(spec: ModelBoosterSpec) -> Iterator[FieldError]:
    backends = spec.backends
    total = 0
    for i, backend in enumerate(backends):
        total += backend.min_replicas
        if backend.min_replicas < 0:
            error = invalid(
                f"spec.backends[{i}].minReplicas",
                backend.min_replicas,
                "minReplicas must be >= 0 when model-level autoscaling is set",
            )
            yield reads(error, error.path, *autoscaling_switches(backends))
        if not backend.scaling_cost:
            error = required(
                f"spec.backends[{i}].scalingCost", "cost must be provided when model-level autoscaling is set"
            )
            yield reads(error, error.path, *autoscaling_switches(backends))
        if backend.scale_to_zero_grace_period is None:
            error = required(
                f"spec.backends[{i}].scaleToZeroGracePeriod",
                "scaleToZeroGracePeriod must be provided when model-level autoscaling is set",
            )
            yield reads(error, error.path, *autoscaling_switches(backends))
    if total < 1:
        error = invalid(
            "spec.backends", total, "sum of all minReplicas must be >= 1 when model-level autoscaling is set"
        )
        yield reads(error, error.path, "spec.autoscalingPolicy")
    if spec.cost_expansion_rate_percent is None:
        error = required(
            "spec.costExpansionRatePercent",
            "costExpansionRatePercent must be provided and > 0 when model-level autoscaling is set",
        )
        yield reads(error, error.path, *autoscaling_switches(backends))


def external_replicas(model: ModelBooster) -> Iterator[FieldError]:
    """The opt-in's value, and no autoscaling policy beside it (something outside sets the replicas)."""
    external = (model.metadata.annotations or {}).get(ANNOTATION_EXTERNAL_REPLICAS)
    if external is not None and external not in EXTERNAL_REPLICAS_VALUES:
        yield invalid(
            EXTERNAL_REPLICAS_PATH,
            external,
            f"must be {' or '.join(repr(value) for value in EXTERNAL_REPLICAS_VALUES)}",
        )
    if replicas_set_externally(model.metadata.annotations):
        policies = autoscaling_switches(model.spec.backends)
        if model.spec.autoscaling_policy is not None or any(b.autoscaling_policy for b in model.spec.backends):
            both = forbidden(EXTERNAL_REPLICAS_PATH, EXTERNAL_WITH_POLICY_DETAIL)
            yield reads(both, "metadata.annotations", *policies)
