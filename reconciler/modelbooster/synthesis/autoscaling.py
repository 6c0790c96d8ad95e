"""AutoscalingPolicy and AutoscalingPolicyBinding objects (docs/design/synthesis.md §13).

Model level (`spec.autoscalingPolicy`): one policy and one optimizer binding, both named after the model,
spreading replicas over every backend by cost. Otherwise each backend with its own policy gets a policy and
a scaling binding named `<model>-<backend>`.

What is wanted is said once, in no generation's shape; shared/autoscaling_generations.py shapes it for the
generation of Kthena's CRDs the cluster serves (v1.0 has no Binding: its policy carries the target). Names,
labels and owner references are the same in every generation.

Two fixes over the reference: the metric endpoint names the backend's runtime port (the reference sent
`{}`, which the API server defaults to 8100, so a backend with another RUNTIME_PORT was never scraped), and
PD backends are not narrowed to a `leader` role their pods do not have.
"""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.synthesis.backend import BackendPlan
from reconciler.modelbooster.synthesis.labels import stamp_revision
from reconciler.modelbooster.synthesis.owner import Owner, child_metadata
from shared.api.modelbooster import ModelBackend, ModelBooster
from shared.autoscaling_generations import (
    DEFAULT_GENERATION,
    AutoscalingObject,
    DesiredAutoscaling,
    Generation,
    MetricsTarget,
    ScaledTarget,
    autoscaling_objects,
)
from shared.constants import DEFAULT_RUNTIME_METRICS_PATH, LABEL_MODELSERVING_ROLE, WORKLOAD_API_VERSION
from shared.external_scaling import replicas_set_externally
from shared.naming import route_name


def is_autoscaled(booster: ModelBooster, backend: ModelBackend) -> bool:
    """Whether an autoscaler, not the ModelBooster, owns this backend's ModelServing `spec.replicas`: a policy
    at either level, or the external-replicas opt-in (Inferno, KEDA or an HPA scales it; no policy is made)."""
    return (
        booster.spec.autoscaling_policy is not None
        or backend.autoscaling_policy is not None
        or replicas_set_externally(booster.metadata.annotations)
    )


def autoscaled_backends(booster: ModelBooster) -> frozenset[str]:
    return frozenset(backend.name for backend in booster.spec.backends if is_autoscaled(booster, backend))


def _child(owner: Owner, *, name: str, backend: str, shaped: AutoscalingObject) -> dict[str, Any]:
    obj = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": shaped.kind,
        "metadata": child_metadata(owner=owner, name=name, backend=backend),
        "spec": shaped.spec,
    }
    return stamp_revision(obj)


def _metrics_target(plan: BackendPlan) -> MetricsTarget:
    # The runtime sidecar serves the metrics the autoscaler reads, on its own port. A PD backend's pods have
    # no `leader` role to narrow to.
    labels = {} if plan.backend.type == "vLLMDisaggregated" else {LABEL_MODELSERVING_ROLE: "leader"}
    return MetricsTarget(
        serving=plan.resource_name, uri=DEFAULT_RUNTIME_METRICS_PATH, port=plan.runtime_port, match_labels=labels
    )


def _scaled(plan: BackendPlan, *, cost: int | None = None) -> ScaledTarget:
    return ScaledTarget(
        target=_metrics_target(plan),
        min_replicas=plan.backend.min_replicas,
        max_replicas=plan.backend.max_replicas,
        cost=cost,
    )


def _children(owner: Owner, *, name: str, backend: str, desired: DesiredAutoscaling, generation: Generation
              ) -> list[dict[str, Any]]:  # fmt: skip
    return [
        _child(owner, name=name, backend=backend, shaped=shaped) for shaped in autoscaling_objects(desired, generation)
    ]


def model_level(
    booster: ModelBooster, owner: Owner, plans: list[BackendPlan], *, generation: Generation = DEFAULT_GENERATION
) -> list[dict[str, Any]]:
    policy = booster.spec.autoscaling_policy
    if policy is None:
        return []
    name = route_name(owner.name)
    desired = DesiredAutoscaling(
        policy_name=name,
        policy=policy.to_wire(),
        targets=[_scaled(plan, cost=plan.backend.scaling_cost) for plan in plans],
        by_cost=True,
        cost_expansion_rate_percent=booster.spec.cost_expansion_rate_percent,
    )
    return _children(owner, name=name, backend="", desired=desired, generation=generation)


def backend_level(plan: BackendPlan, *, generation: Generation = DEFAULT_GENERATION) -> list[dict[str, Any]]:
    policy = plan.backend.autoscaling_policy
    if policy is None:
        return []
    desired = DesiredAutoscaling(policy_name=plan.resource_name, policy=policy.to_wire(), targets=[_scaled(plan)])
    return _children(plan.owner, name=plan.resource_name, backend=plan.backend.name, desired=desired,
                     generation=generation)  # fmt: skip


def role_scaled_backends(booster: ModelBooster) -> frozenset[str]:
    """The disaggregated backends whose roles' replicas are set from outside (the external-replicas opt-in:
    Inferno scales prefill and decode apart, docs/design/inferno.md §19): the reconciler creates each role at
    its worker's replicas and never writes them again."""
    if not replicas_set_externally(booster.metadata.annotations):
        return frozenset()
    return frozenset(backend.name for backend in booster.spec.backends if backend.type == "vLLMDisaggregated")

