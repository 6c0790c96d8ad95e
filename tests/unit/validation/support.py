"""What the rule tests of every group share: an object's error lines, a model-level autoscaled object, and the
texts more than one group's tests expect."""

from __future__ import annotations

from typing import Any

from shared.validation import validate_modelbooster
from tests.unit.factories import backend, modelbooster, policy

# The no-autoscaling rule's message: the reference's words, then the two ways to let replicas move.
NO_AUTOSCALING = (
    "minReplicas and maxReplicas must be equal when no autoscaling is set; to let replicas move between them, set "
    'autoscalingPolicy, or annotate the ModelBooster modelbooster.io/external-replicas: "true" so they are set from '
    "outside (Inferno, KEDA or an HPA)"
)
RATE = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"


def lines(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> list[str]:
    return [error.render() for error in validate_modelbooster(obj, old=old)]


def model_level(*backends: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A valid model-level autoscaled object around the given backends."""
    spec.setdefault("autoscalingPolicy", policy())
    spec.setdefault("costExpansionRatePercent", 200)
    return modelbooster(*backends, **spec)


def scaled(name: str = "a", **fields: Any) -> dict[str, Any]:
    """A backend ready for model-level autoscaling."""
    fields.setdefault("scalingCost", 10)
    fields.setdefault("scaleToZeroGracePeriod", "30s")
    fields.setdefault("maxReplicas", 4)
    return backend(name, **fields)
