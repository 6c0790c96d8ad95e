"""The child kinds a ModelBooster owns, with the schemas of Kthena v0.1.0 (docs/design/api.md §5).

Kthena's own controllers (ModelServing, router, autoscaler) consume these objects, so the shapes here are
theirs, not ours: we model every documented field, including the ones synthesis never sets, so that the
CRDs we can install are faithful and a live object read back from the API server parses.

Conventions shared with `shared/api/modelbooster.py`: camelCase on the wire through `ApiModel`; optional
fields default to `None` so that "absent" survives a round trip; the defaults the API server fills in are
declared as `json_schema_extra={"default": ...}` for the CRD generator rather than as Python defaults.
Pod specs are the full core/v1 PodSpec, as in Kthena's CRD.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from kubernetes.client import V1LabelSelector, V1ObjectReference, V1PodSpec
from pydantic import ConfigDict, Field

from shared.api.base import ApiModel, Condition, ObjectMeta
from shared.api.modelbooster import AutoscalingMetric, ModelMatch
from shared.constants import MAX_REPLICAS

Int32 = Annotated[int, Field(json_schema_extra={"format": "int32"})]
Int64 = Annotated[int, Field(json_schema_extra={"format": "int64"})]
# metav1.Duration on the wire: Go duration text such as `15s` or `1m30s`.
Duration = str
IntOrString = Annotated[int | str, Field(json_schema_extra={"x-kubernetes-int-or-string": True})]
MinReplicas = Annotated[int, Field(ge=0, le=MAX_REPLICAS, json_schema_extra={"format": "int32"})]
MaxReplicas = Annotated[int, Field(ge=1, le=MAX_REPLICAS, json_schema_extra={"format": "int32"})]


def _default(value: object, **extra: object) -> dict[str, Any]:
    """The CRD default the API server fills in, plus any other schema keywords."""
    return {"default": value, **extra}


class EmptyStatus(ApiModel):
    """The `status: {}` of ModelServer, ModelRoute, AutoscalingPolicy and Binding at v0.1.0.

    Ignoring unknown keys lets us read objects written by a newer Kthena whose status has grown fields.
    """

    model_config = ConfigDict(extra="ignore")


# --- AutoscalingPolicy (workload.serving.volcano.sh/v1alpha1) -------------------------------------------------


class StablePolicy(ApiModel):
    instances: Int32 | None = Field(default=None, ge=0, json_schema_extra=_default(1))
    percent: Int32 | None = Field(default=None, ge=0, le=1000, json_schema_extra=_default(100))
    period: Duration | None = Field(default=None, json_schema_extra=_default("15s"))
    select_policy: Literal["Or", "And"] | None = Field(default=None, json_schema_extra=_default("Or"))
    stabilization_window: Duration | None = None


class PanicPolicy(ApiModel):
    percent: Int32 | None = Field(default=None, ge=0, le=1000, json_schema_extra=_default(1000))
    period: Duration
    panic_threshold_percent: Int32 | None = Field(default=None, ge=110, le=1000, json_schema_extra=_default(200))
    panic_mode_hold: Duration | None = Field(default=None, json_schema_extra=_default("60s"))


class ScaleUpBehavior(ApiModel):
    stable_policy: StablePolicy | None = None
    panic_policy: PanicPolicy | None = None


class AutoscalingPolicyBehavior(ApiModel):
    scale_down: StablePolicy | None = None
    scale_up: ScaleUpBehavior | None = None


class AutoscalingPolicySpec(ApiModel):
    tolerance_percent: Int32 | None = Field(default=None, ge=0, le=100, json_schema_extra=_default(10))
    metrics: list[AutoscalingMetric] = Field(min_length=1)
    behavior: AutoscalingPolicyBehavior | None = None


class AutoscalingPolicy(ApiModel):
    api_version: Literal["workload.serving.volcano.sh/v1alpha1"] = "workload.serving.volcano.sh/v1alpha1"
    kind: Literal["AutoscalingPolicy"] = "AutoscalingPolicy"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AutoscalingPolicySpec
    status: EmptyStatus | None = None


# --- AutoscalingPolicyBinding (workload.serving.volcano.sh/v1alpha1) -------------------------------------------


class PolicyRef(ApiModel):
    name: str | None = Field(default=None, json_schema_extra=_default(""))


class MetricEndpoint(ApiModel):
    uri: str | None = Field(default=None, json_schema_extra=_default("/metrics"))
    port: Int32 | None = Field(default=None, json_schema_extra=_default(8100))


class ScalingTarget(ApiModel):
    target_ref: V1ObjectReference
    additional_match_labels: dict[str, str] | None = None
    metric_endpoint: MetricEndpoint | None = None


class OptimizerParam(ApiModel):
    target: ScalingTarget | None = None
    cost: Int32 | None = Field(default=None, ge=0)
    min_replicas: MinReplicas
    max_replicas: MaxReplicas


class OptimizerConfiguration(ApiModel):
    cost_expansion_rate_percent: Int32 | None = Field(default=None, ge=0, json_schema_extra=_default(200))
    params: list[OptimizerParam] = Field(min_length=1)


class ScalingConfiguration(ApiModel):
    target: ScalingTarget | None = None
    min_replicas: MinReplicas
    max_replicas: MaxReplicas


class AutoscalingPolicyBindingSpec(ApiModel):
    policy_ref: PolicyRef
    optimizer_configuration: OptimizerConfiguration | None = None
    scaling_configuration: ScalingConfiguration | None = None


class AutoscalingPolicyBinding(ApiModel):
    api_version: Literal["workload.serving.volcano.sh/v1alpha1"] = "workload.serving.volcano.sh/v1alpha1"
    kind: Literal["AutoscalingPolicyBinding"] = "AutoscalingPolicyBinding"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AutoscalingPolicyBindingSpec
    status: EmptyStatus | None = None


# CEL rule of Kthena's binding CRD on `spec`; the CRD generator attaches it.
BINDING_ONE_CONFIGURATION_RULE = "has(self.optimizerConfiguration) != has(self.scalingConfiguration)"
BINDING_ONE_CONFIGURATION_MESSAGE = "Either optimizerConfiguration or scalingConfiguration must be set, but not both."


# --- ModelServing (workload.serving.volcano.sh/v1alpha1) -------------------------------------------------------

ROLE_NAME_PATTERN = r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"


class PodTemplateMetadata(ApiModel):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class PodTemplate(ApiModel):
    metadata: PodTemplateMetadata | None = None
    spec: V1PodSpec


class Role(ApiModel):
    name: str = Field(max_length=12, pattern=ROLE_NAME_PATTERN)
    replicas: Int32 | None = Field(default=None, json_schema_extra=_default(1))
    entry_template: PodTemplate
    # No minimum in Kthena's CRD; its ModelServing webhook rejects negatives (docs/design/quirks.md §1, Q12).
    worker_replicas: Int32
    worker_template: PodTemplate | None = None


class GangPolicy(ApiModel):
    min_role_replicas: dict[str, Int32] | None = None


class NetworkTopology(ApiModel):
    highest_tier_allowed: int | None = Field(default=None, json_schema_extra=_default(1))
    mode: Literal["hard", "soft"] | None = Field(default=None, json_schema_extra=_default("hard"))


class ServingTemplate(ApiModel):
    restart_grace_period_seconds: Int64 | None = Field(default=None, json_schema_extra=_default(0))
    gang_policy: GangPolicy | None = None
    network_topology: NetworkTopology | None = None
    roles: list[Role] = Field(min_length=1, max_length=4)


class RollingUpdateConfiguration(ApiModel):
    max_unavailable: IntOrString | None = Field(default=None, json_schema_extra=_default(1))
    max_surge: IntOrString | None = Field(default=None, json_schema_extra=_default(0))
    partition: Int32 | None = None


class RolloutStrategy(ApiModel):
    type: Literal["ServingGroupRollingUpdate"] = Field(json_schema_extra=_default("ServingGroupRollingUpdate"))
    rolling_update_configuration: RollingUpdateConfiguration | None = None


class TopologySpreadConstraint(ApiModel):
    max_skew: Int32
    topology_key: str
    when_unsatisfiable: str
    label_selector: V1LabelSelector | None = None


class ModelServingSpec(ApiModel):
    replicas: Int32 | None = Field(default=None, json_schema_extra=_default(1))
    # Required by Kthena's CRD, and may be "" (the cluster's default scheduler).
    scheduler_name: str
    template: ServingTemplate
    rollout_strategy: RolloutStrategy | None = None
    recovery_policy: Literal["ServingGroupRecreate", "RoleRecreate", "None"] | None = Field(
        default=None, json_schema_extra=_default("RoleRecreate")
    )
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None


class ModelServingStatus(ApiModel):
    observed_generation: Int64 | None = None
    replicas: Int32 | None = None
    current_replicas: Int32 | None = None
    updated_replicas: Int32 | None = None
    available_replicas: Int32 | None = None
    conditions: list[Condition] | None = None
    # The serving groups' pod selector, as Kthena v1.0 reports it: the scale subresource's labelSelectorPath.
    label_selector: str | None = None


# The scale subresource of the ModelServing CRD (Kthena v1.0 serves one), so HPA, KEDA and the Inferno
# controller can read and set a backend's replicas through `/scale`.
MODEL_SERVING_SCALE: dict[str, str] = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
    "labelSelectorPath": ".status.labelSelector",
}


class ModelServing(ApiModel):
    api_version: Literal["workload.serving.volcano.sh/v1alpha1"] = "workload.serving.volcano.sh/v1alpha1"
    kind: Literal["ModelServing"] = "ModelServing"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ModelServingSpec
    status: ModelServingStatus | None = None


# CEL rules of Kthena's ModelServing CRD, keyed by the JSON path of the object they sit on.
MODEL_SERVING_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "spec.template": (("!has(oldSelf.gangPolicy) || has(self.gangPolicy)", "gangPolicy is required once set"),),
    "spec.template.gangPolicy": (
        ("!has(oldSelf.minRoleReplicas) || has(self.minRoleReplicas)", "minRoleReplicas is required once set"),
    ),
    "spec.template.gangPolicy.minRoleReplicas": (("self == oldSelf", "minRoleReplicas is immutable"),),
    "spec.template.roles": (("self.all(x, self.exists_one(y, y.name == x.name))", "roles name must be unique"),),
}


# --- ModelServer (networking.serving.volcano.sh/v1alpha1) ------------------------------------------------------


class PDGroup(ApiModel):
    group_key: str
    prefill_labels: dict[str, str]
    decode_labels: dict[str, str]


class WorkloadSelector(ApiModel):
    match_labels: dict[str, str] | None = None
    pd_group: PDGroup | None = None


class WorkloadPort(ApiModel):
    port: Int32 = Field(ge=1, le=65535)
    protocol: Literal["http", "https"] | None = Field(default=None, json_schema_extra=_default("http"))


class Retry(ApiModel):
    attempts: Int32 | None = None
    retry_interval: Duration | None = Field(default=None, json_schema_extra=_default("100ms"))


class TrafficPolicy(ApiModel):
    timeout: Duration | None = None
    retry: Retry | None = None


KVConnectorType = Literal["http", "lmcache", "nixl", "mooncake"]


class KVConnector(ApiModel):
    type: KVConnectorType | None = Field(default=None, json_schema_extra=_default("http"))


class ModelServerSpec(ApiModel):
    model: str | None = Field(default=None, max_length=256)
    inference_engine: Literal["vLLM", "SGLang"]
    workload_selector: WorkloadSelector
    workload_port: WorkloadPort
    traffic_policy: TrafficPolicy | None = None
    kv_connector: KVConnector | None = None


class ModelServer(ApiModel):
    api_version: Literal["networking.serving.volcano.sh/v1alpha1"] = "networking.serving.volcano.sh/v1alpha1"
    kind: Literal["ModelServer"] = "ModelServer"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ModelServerSpec
    status: EmptyStatus | None = None


# --- ModelRoute (networking.serving.volcano.sh/v1alpha1) -------------------------------------------------------


class TargetModel(ApiModel):
    model_server_name: str
    weight: Int32 | None = Field(default=None, ge=0, le=100, json_schema_extra=_default(100))


class Rule(ApiModel):
    name: str | None = None
    model_match: ModelMatch | None = None
    target_models: list[TargetModel] = Field(max_length=16)


class RedisConfig(ApiModel):
    address: str


class GlobalRateLimit(ApiModel):
    redis: RedisConfig | None = None


class RateLimit(ApiModel):
    input_tokens_per_unit: Int32 | None = Field(default=None, ge=1)
    output_tokens_per_unit: Int32 | None = Field(default=None, ge=1)
    unit: Literal["second", "minute", "hour", "day", "month"] = Field(json_schema_extra=_default("second"))
    global_: GlobalRateLimit | None = Field(default=None, alias="global")


class ModelRouteSpec(ApiModel):
    model_name: str | None = None
    lora_adapters: list[str] | None = Field(default=None, max_length=10)
    rules: list[Rule] = Field(max_length=16)
    rate_limit: RateLimit | None = None


class ModelRoute(ApiModel):
    api_version: Literal["networking.serving.volcano.sh/v1alpha1"] = "networking.serving.volcano.sh/v1alpha1"
    kind: Literal["ModelRoute"] = "ModelRoute"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ModelRouteSpec
    status: EmptyStatus | None = None


# CEL rules of Kthena's ModelRoute CRD.
MODEL_ROUTE_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "spec": (
        ('self.modelName != "" || size(self.loraAdapters) > 0', "ModelName and LoraAdapters cannot both be empty"),
    ),
    "spec.modelName": (("self == oldSelf", "modelName is immutable"),),
}

ChildModel = ModelServing | ModelServer | ModelRoute | AutoscalingPolicy | AutoscalingPolicyBinding

# kind -> model, for code that parses a child it read from the API server.
CHILD_MODELS: dict[str, type[ApiModel]] = {
    "ModelServing": ModelServing,
    "ModelServer": ModelServer,
    "ModelRoute": ModelRoute,
    "AutoscalingPolicy": AutoscalingPolicy,
    "AutoscalingPolicyBinding": AutoscalingPolicyBinding,
}
