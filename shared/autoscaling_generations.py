"""The shapes Kthena's autoscaling objects took over its releases, and which one a cluster serves.

All three generations are `workload.serving.volcano.sh/v1alpha1` (docs/design/kthena-generations.md §1):

- **v0.1** (Kthena v0.1.0, and the child CRDs we ship): an AutoscalingPolicy holds the metrics
  (`{metricName, targetValue}`); an AutoscalingPolicyBinding holds `policyRef` and either a
  `scalingConfiguration` (one ModelServing) or an `optimizerConfiguration` (several, by cost). A target is
  `{targetRef, additionalMatchLabels, metricEndpoint {uri, port}}`.
- **v0.2** (Kthena v0.2.0 to v0.4.0): the Binding's two configurations were renamed `homogeneousTarget` and
  `heterogeneousTarget` (same fields); a target's extra pod labels moved into `metricEndpoint.labelSelector`.
- **v1.0** (Kthena v1.0.0): no Binding kind. The AutoscalingPolicy carries the target itself
  (`homogeneousTarget` / `heterogeneousTarget`); a metric is `{name, targetValue}`; a target names, per metric,
  where to read it: `metricSources {<metric>: {pod: {name, uri, port, labelSelector}}}`.

`autoscaling_objects(desired, generation)` is the one place that turns what a ModelBooster wants
(`DesiredAutoscaling`, the same for every generation) into the kinds and specs of one generation; synthesis
adds names, labels and owner references. `served_generation(...)` tells, from the schemas a cluster serves,
which generation that is. `UNDECLARED_FIELDS` lists what our rendering carries that a generation's CRDs do
not declare (the API server prunes it), so `modelbooster render` can say so without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from shared.constants import (
    KIND_AUTOSCALING_POLICY,
    KIND_AUTOSCALING_POLICY_BINDING,
    KIND_MODEL_SERVING,
)


class Generation(StrEnum):
    V0_1 = "v0.1"
    V0_2 = "v0.2"
    V1_0 = "v1.0"

    @property
    def releases(self) -> str:
        return _RELEASES[self]


_RELEASES: Final = {
    Generation.V0_1: "Kthena v0.1.0 (and the child CRDs this chart ships)",
    Generation.V0_2: "Kthena v0.2.0 to v0.4.0",
    Generation.V1_0: "Kthena v1.0.0",
}
# The shape of the child CRDs we ship (charts/modelbooster/charts/child-crds).
DEFAULT_GENERATION: Final = Generation.V0_1
# Each Kthena release as users write it (`v0.4.0`, `v0.3`, `1.0`, `v1`), and the generation of its child CRDs.
_RELEASE_GENERATIONS: Final = {
    "0.1": Generation.V0_1,
    "0.2": Generation.V0_2,
    "0.3": Generation.V0_2,
    "0.4": Generation.V0_2,
    "1": Generation.V1_0,
    "1.0": Generation.V1_0,
}


def generation_of_release(name: str) -> Generation | None:
    """The generation of a Kthena release as users type it (`v0.3`, `0.4.0`, `v1`, `1.0`), or None."""
    text = name.strip().lower().removeprefix("v")
    if text.endswith(".0") and text.count(".") == 2:
        text = text[: -len(".0")]
    return _RELEASE_GENERATIONS.get(text)

# Fields our children carry that a generation's CRDs do not declare: the API server drops them on write.
UNDECLARED_FIELDS: Final[Mapping[Generation, Mapping[str, tuple[tuple[str, ...], ...]]]] = {
    Generation.V0_1: {},
    Generation.V0_2: {KIND_MODEL_SERVING: (("spec", "topologySpreadConstraints"),)},
    Generation.V1_0: {KIND_MODEL_SERVING: (("spec", "topologySpreadConstraints"),)},
}


@dataclass(frozen=True)
class MetricsTarget:
    """One ModelServing an autoscaler scales, and where it reads the metrics of its pods."""

    serving: str
    uri: str
    port: int
    # Pod labels that narrow the pods scraped (the entry pods of a single-role ModelServing); empty for none.
    match_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ScaledTarget:
    target: MetricsTarget
    min_replicas: int
    max_replicas: int
    cost: int | None = None  # relative cost, for scaling several targets together


@dataclass(frozen=True)
class DesiredAutoscaling:
    """What a ModelBooster wants autoscaled, in no generation's shape.

    `policy` is the AutoscalingPolicy spec as our API holds it (wire form, metrics as `{metricName,
    targetValue}`). `by_cost` says the targets are scaled together by cost (model-level autoscaling: a
    heterogeneous target, an optimizer configuration); otherwise there is exactly one target.
    """

    policy_name: str
    policy: Mapping[str, Any]
    targets: Sequence[ScaledTarget]
    by_cost: bool = False
    cost_expansion_rate_percent: int | None = None


@dataclass(frozen=True)
class AutoscalingObject:
    kind: str
    spec: dict[str, Any]


def autoscaling_objects(desired: DesiredAutoscaling, generation: Generation) -> list[AutoscalingObject]:
    """The autoscaling objects of `generation` for `desired`, policy first (docstring of this module)."""
    if generation is Generation.V1_0:
        return [AutoscalingObject(KIND_AUTOSCALING_POLICY, _v1_policy(desired))]
    policy = AutoscalingObject(KIND_AUTOSCALING_POLICY, _copy(desired.policy))
    return [policy, AutoscalingObject(KIND_AUTOSCALING_POLICY_BINDING, _binding(desired, generation))]


def kinds_needed(generation: Generation) -> tuple[str, ...]:
    """The kinds a ModelBooster with autoscaling needs served in `generation`."""
    if generation is Generation.V1_0:
        return (KIND_AUTOSCALING_POLICY,)
    return (KIND_AUTOSCALING_POLICY, KIND_AUTOSCALING_POLICY_BINDING)


def served_generation(
    policy_schema: Mapping[str, Any] | None, binding_schema: Mapping[str, Any] | None
) -> Generation | None:
    """Which generation the served AutoscalingPolicy and Binding schemas (their openAPIV3Schema, None when the
    kind is not served) belong to; None when autoscaling objects cannot be written at all (no AutoscalingPolicy,
    or a policy that needs a Binding the cluster does not serve)."""
    if policy_schema is None:
        return None
    if "homogeneousTarget" in _spec_properties(policy_schema):
        return Generation.V1_0
    if binding_schema is None:
        return None
    if "homogeneousTarget" in _spec_properties(binding_schema):
        return Generation.V0_2
    return Generation.V0_1


def missing_kinds(policy_schema: Mapping[str, Any] | None, binding_schema: Mapping[str, Any] | None) -> list[str]:
    """The kinds whose absence makes `served_generation` None."""
    if policy_schema is None:
        return [KIND_AUTOSCALING_POLICY]
    if served_generation(policy_schema, binding_schema) is None:
        return [KIND_AUTOSCALING_POLICY_BINDING]
    return []


# --------------------------------------------------------------------------- shapes
def _spec_properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = (schema.get("properties") or {}).get("spec")
    properties = spec.get("properties") if isinstance(spec, Mapping) else None
    return properties if isinstance(properties, Mapping) else {}


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(item) for item in value]
    return value


def _target_ref(target: MetricsTarget) -> dict[str, Any]:
    return {"kind": KIND_MODEL_SERVING, "name": target.serving}


def _label_selector(target: MetricsTarget) -> dict[str, Any]:
    return {"matchLabels": dict(target.match_labels)}


def _target(target: MetricsTarget, generation: Generation, metric_names: Sequence[str]) -> dict[str, Any]:
    shaped: dict[str, Any] = {"targetRef": _target_ref(target)}
    if generation is Generation.V0_1:
        if target.match_labels:
            shaped["additionalMatchLabels"] = dict(target.match_labels)
        shaped["metricEndpoint"] = {"uri": target.uri, "port": target.port}
    elif generation is Generation.V0_2:
        endpoint: dict[str, Any] = {"uri": target.uri, "port": target.port}
        if target.match_labels:
            endpoint["labelSelector"] = _label_selector(target)
        shaped["metricEndpoint"] = endpoint
    else:
        sources: dict[str, Any] = {}
        for name in metric_names:
            pod: dict[str, Any] = {"name": name, "uri": target.uri, "port": target.port}
            if target.match_labels:
                pod["labelSelector"] = _label_selector(target)
            sources[name] = {"pod": pod}
        shaped["metricSources"] = sources
    return shaped


def _metric_names(desired: DesiredAutoscaling) -> list[str]:
    return [str(metric.get("metricName")) for metric in desired.policy.get("metrics") or ()]


def _one_target(desired: DesiredAutoscaling, generation: Generation) -> dict[str, Any]:
    """`scalingConfiguration` (v0.1) / `homogeneousTarget` (v0.2, v1.0): one target and its bounds."""
    (scaled,) = desired.targets
    return {
        "target": _target(scaled.target, generation, _metric_names(desired)),
        "minReplicas": scaled.min_replicas,
        "maxReplicas": scaled.max_replicas,
    }


def _params(desired: DesiredAutoscaling, generation: Generation) -> list[dict[str, Any]]:
    params = []
    for scaled in desired.targets:
        param: dict[str, Any] = {"target": _target(scaled.target, generation, _metric_names(desired))}
        if scaled.cost:
            param["cost"] = scaled.cost
        param["minReplicas"] = scaled.min_replicas
        param["maxReplicas"] = scaled.max_replicas
        params.append(param)
    return params


def _by_cost(desired: DesiredAutoscaling, generation: Generation) -> dict[str, Any]:
    """`optimizerConfiguration` (v0.1) / `heterogeneousTarget` (v0.2, v1.0): targets scaled together by cost."""
    config: dict[str, Any] = {}
    if generation is Generation.V0_1:
        # v0.1's order (rate first) kept, so objects written before read back unchanged.
        if desired.cost_expansion_rate_percent is not None:
            config["costExpansionRatePercent"] = desired.cost_expansion_rate_percent
        config["params"] = _params(desired, generation)
        return config
    config["params"] = _params(desired, generation)
    if desired.cost_expansion_rate_percent is not None:
        config["costExpansionRatePercent"] = desired.cost_expansion_rate_percent
    return config


_TARGET_FIELDS: Final = {
    Generation.V0_1: ("scalingConfiguration", "optimizerConfiguration"),
    Generation.V0_2: ("homogeneousTarget", "heterogeneousTarget"),
    Generation.V1_0: ("homogeneousTarget", "heterogeneousTarget"),
}


def _targets(desired: DesiredAutoscaling, generation: Generation) -> dict[str, Any]:
    one, several = _TARGET_FIELDS[generation]
    if desired.by_cost:
        return {several: _by_cost(desired, generation)}
    return {one: _one_target(desired, generation)}


def _binding(desired: DesiredAutoscaling, generation: Generation) -> dict[str, Any]:
    return {"policyRef": {"name": desired.policy_name}, **_targets(desired, generation)}


def _v1_policy(desired: DesiredAutoscaling) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key, value in desired.policy.items():
        if key == "metrics":
            spec["metrics"] = [
                {"name": metric.get("metricName"), "targetValue": _copy(metric.get("targetValue"))} for metric in value
            ]
        else:
            spec[key] = _copy(value)
    spec.update(_targets(desired, Generation.V1_0))
    return spec
