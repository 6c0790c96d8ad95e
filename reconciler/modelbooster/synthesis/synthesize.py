"""ModelBooster -> the ordered list of child objects it wants (a pure function, no I/O: docs/design/synthesis.md §1)."""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.synthesis.autoscaling import backend_level, is_autoscaled, model_level
from reconciler.modelbooster.synthesis.backend import plan_backend
from reconciler.modelbooster.synthesis.errors import SynthesisError
from reconciler.modelbooster.synthesis.modelroute import model_route
from reconciler.modelbooster.synthesis.modelserver import model_server
from reconciler.modelbooster.synthesis.modelserving import model_serving
from reconciler.modelbooster.synthesis.owner import Owner
from reconciler.modelbooster.synthesis.settings import SynthesisSettings
from shared.api.modelbooster import ModelBooster
from shared.autoscaling_generations import DEFAULT_GENERATION, Generation


def owner_of(booster: ModelBooster) -> Owner:
    metadata = booster.metadata
    if not metadata.name:
        raise SynthesisError("metadata.name is required")
    if not metadata.uid:
        raise SynthesisError("metadata.uid is required: children select and own by it")
    return Owner(name=metadata.name, namespace=metadata.namespace or "default", uid=metadata.uid)


def synthesize(
    booster: ModelBooster, settings: SynthesisSettings | None = None, *, generation: Generation = DEFAULT_GENERATION
) -> list[dict[str, Any]]:
    """The children of a defaulted ModelBooster, in a stable order: for each backend its ModelServing then
    its ModelServer; the ModelRoute; then the model-level AutoscalingPolicy and Binding, or each backend's.
    `generation` is the shape of Kthena's autoscaling CRDs to write them in (v1.0: a policy, no Binding).

    Raise SynthesisError when the object cannot be synthesized (validation rejects all such objects first).
    """
    settings = settings or SynthesisSettings()
    owner = owner_of(booster)
    plans = [plan_backend(owner, backend) for backend in booster.spec.backends]
    children: list[dict[str, Any]] = []
    for plan in plans:
        autoscaled = is_autoscaled(booster, plan.backend)
        children.append(model_serving(plan, settings=settings, autoscaled=autoscaled))
        children.append(model_server(plan))
    children.append(model_route(booster, owner))
    if booster.spec.autoscaling_policy is not None:
        children.extend(model_level(booster, owner, plans, generation=generation))
    else:
        for plan in plans:
            children.extend(backend_level(plan, generation=generation))
    return children
