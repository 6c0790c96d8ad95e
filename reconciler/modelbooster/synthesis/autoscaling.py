"""AutoscalingPolicy and AutoscalingPolicyBinding objects (docs/design/synthesis.md §13).

Model level (`spec.autoscalingPolicy`): one policy and one optimizer binding, both named after the model,
spreading replicas over every backend by cost. Otherwise each backend with its own policy gets a policy and
a scaling binding named `<model>-<backend>`.

Two fixes over the reference: the metric endpoint names the backend's runtime port (the reference sent
`{}`, which the API server defaults to 8100, so a backend with another RUNTIME_PORT was never scraped), and
PD backends are not narrowed to a `leader` role their pods do not have.
"""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.synthesis.backend import BackendPlan
from reconciler.modelbooster.synthesis.labels import stamp_revision
from reconciler.modelbooster.synthesis.owner import Owner, child_metadata
from shared.api.modelbooster import AutoscalingPolicySpec, ModelBackend, ModelBooster
from shared.constants import (
    DEFAULT_RUNTIME_METRICS_PATH,
    KIND_AUTOSCALING_POLICY,
    KIND_AUTOSCALING_POLICY_BINDING,
    KIND_MODEL_SERVING,
    LABEL_MODELSERVING_ROLE,
    WORKLOAD_API_VERSION,
)
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


def _policy(owner: Owner, *, name: str, backend: str, policy: AutoscalingPolicySpec) -> dict[str, Any]:
    obj = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": KIND_AUTOSCALING_POLICY,
        "metadata": child_metadata(owner=owner, name=name, backend=backend),
        "spec": policy.to_wire(),
    }
    return stamp_revision(obj)


def _binding(owner: Owner, *, name: str, backend: str, spec: dict[str, Any]) -> dict[str, Any]:
    obj = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": KIND_AUTOSCALING_POLICY_BINDING,
        "metadata": child_metadata(owner=owner, name=name, backend=backend),
        "spec": spec,
    }
    return stamp_revision(obj)


def _target(plan: BackendPlan) -> dict[str, Any]:
    target: dict[str, Any] = {"targetRef": {"kind": KIND_MODEL_SERVING, "name": plan.resource_name}}
    if plan.backend.type != "vLLMDisaggregated":
        target["additionalMatchLabels"] = {LABEL_MODELSERVING_ROLE: "leader"}
    # The runtime sidecar serves the metrics the autoscaler reads, on its own port.
    target["metricEndpoint"] = {"uri": DEFAULT_RUNTIME_METRICS_PATH, "port": plan.runtime_port}
    return target


def model_level(booster: ModelBooster, owner: Owner, plans: list[BackendPlan]) -> list[dict[str, Any]]:
    policy = booster.spec.autoscaling_policy
    if policy is None:
        return []
    params = []
    for plan in plans:
        param: dict[str, Any] = {"target": _target(plan)}
        if plan.backend.scaling_cost:
            param["cost"] = plan.backend.scaling_cost
        param["minReplicas"] = plan.backend.min_replicas
        param["maxReplicas"] = plan.backend.max_replicas
        params.append(param)
    optimizer: dict[str, Any] = {}
    if booster.spec.cost_expansion_rate_percent is not None:
        optimizer["costExpansionRatePercent"] = booster.spec.cost_expansion_rate_percent
    optimizer["params"] = params
    name = route_name(owner.name)
    return [
        _policy(owner, name=name, backend="", policy=policy),
        _binding(owner, name=name, backend="", spec={"policyRef": {"name": name}, "optimizerConfiguration": optimizer}),
    ]


def backend_level(plan: BackendPlan) -> list[dict[str, Any]]:
    backend = plan.backend
    policy = backend.autoscaling_policy
    if policy is None:
        return []
    scaling = {
        "target": _target(plan),
        "minReplicas": backend.min_replicas,
        "maxReplicas": backend.max_replicas,
    }
    spec = {"policyRef": {"name": plan.resource_name}, "scalingConfiguration": scaling}
    return [
        _policy(plan.owner, name=plan.resource_name, backend=backend.name, policy=policy),
        _binding(plan.owner, name=plan.resource_name, backend=backend.name, spec=spec),
    ]
