"""ModelBooster (`workload.serving.volcano.sh/v1alpha1`): the multi-backend API of Kthena v0.1.0.

Field shapes follow kthena-v0.1.0-facts §1.2 with the additions DECISIONS.md §1 adopts from the newer line
(`obs://` and `ms://` model URIs, worker tolerations, backend runtimeClassName). The four features that
ModelBooster does not support (DECISIONS.md §2) are declared here as free-form objects so that they reach
admission and are rejected with a message, instead of being silently pruned.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from kubernetes.client import V1Affinity, V1EnvFromSource, V1EnvVar, V1Toleration
from pydantic import Field, JsonValue

from shared.api.base import ApiModel, Condition, ObjectMeta
from shared.constants import DNS1123_LABEL_PATTERN, MAX_REPLICAS
from shared.quantity import Quantity

MODEL_URI_PATTERN = r"^(hf://|s3://|pvc://|obs://|ms://).+"
CACHE_URI_PATTERN = r"^(hostpath://|pvc://).+"
LORA_URI_PATTERN = r"^(hf://|s3://|pvc://).+"

BackendType = Literal["vLLM", "vLLMDisaggregated", "SGLang", "MindIE", "MindIEDisaggregated"]
WorkerType = Literal["server", "prefill", "decode", "controller", "coordinator"]
SUPPORTED_BACKEND_TYPES: tuple[BackendType, ...] = ("vLLM", "vLLMDisaggregated")

DnsLabel = Annotated[str, Field(pattern=DNS1123_LABEL_PATTERN)]
Int32 = Annotated[int, Field(json_schema_extra={"format": "int32"})]
Replicas = Annotated[int, Field(ge=0, le=MAX_REPLICAS, json_schema_extra={"format": "int32"})]
# A declared-but-unsupported feature: any JSON object, kept so admission can reject it by name.
UnsupportedFeature = Annotated[
    dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})
]


class ResourceClaim(ApiModel):
    name: str
    request: str | None = None


class ResourceRequirements(ApiModel):
    """core/v1 ResourceRequirements; quantities are int-or-string like the API server takes them."""

    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[ResourceClaim] | None = None


class StringMatch(ApiModel):
    exact: str | None = None
    prefix: str | None = None
    regex: str | None = None


class BodyMatch(ApiModel):
    model: str | None = None


class ModelMatch(ApiModel):
    headers: dict[str, StringMatch] | None = None
    uri: StringMatch | None = None
    body: BodyMatch | None = None


class AutoscalingMetric(ApiModel):
    metric_name: str
    target_value: Quantity


class AutoscalingPolicySpec(ApiModel):
    """The AutoscalingPolicy `.spec` shape, embedded at model and backend level."""

    tolerance_percent: Int32 | None = Field(default=None, ge=0, le=100)
    metrics: list[AutoscalingMetric] = Field(min_length=1)
    # Unsupported (DECISIONS §2): declared so it is rejected by name rather than pruned.
    behavior: UnsupportedFeature | None = None


class LoraAdapter(ApiModel):
    name: DnsLabel
    artifact_url: str = Field(alias="artifactURL", pattern=LORA_URI_PATTERN)


class ModelWorker(ApiModel):
    type: WorkerType | None = None
    image: str | None = None
    replicas: Replicas | None = None
    pods: Replicas | None = None
    resources: ResourceRequirements | None = None
    affinity: V1Affinity | None = None
    tolerations: list[V1Toleration] | None = None
    config: JsonValue = Field(default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})
    network_topology: UnsupportedFeature | None = None


class ModelBackend(ApiModel):
    name: DnsLabel
    type: BackendType
    model_uri: str = Field(alias="modelURI", pattern=MODEL_URI_PATTERN)
    cache_uri: str | None = Field(default=None, alias="cacheURI", pattern=CACHE_URI_PATTERN)
    env_from: list[V1EnvFromSource] | None = None
    env: list[V1EnvVar] | None = None
    min_replicas: Replicas
    max_replicas: Int32 = Field(ge=1, le=MAX_REPLICAS)
    scaling_cost: Int32 | None = Field(default=None, ge=0)
    route_weight: Int32 | None = Field(default=None, ge=0, le=100)
    scale_to_zero_grace_period: str | None = None
    workers: list[ModelWorker] = Field(min_length=1, max_length=1000)
    lora_adapters: list[LoraAdapter] | None = None
    autoscaling_policy: AutoscalingPolicySpec | None = None
    scheduler_name: str | None = None
    runtime_class_name: str | None = None
    rate_limit: UnsupportedFeature | None = None
    network_topology: UnsupportedFeature | None = None
    topology: UnsupportedFeature | None = None


class ModelBoosterSpec(ApiModel):
    name: str | None = Field(default=None, max_length=64, pattern=DNS1123_LABEL_PATTERN)
    owner: str | None = None
    backends: list[ModelBackend] = Field(min_length=1)
    autoscaling_policy: AutoscalingPolicySpec | None = None
    cost_expansion_rate_percent: Int32 | None = Field(default=None, ge=0, le=1000)
    model_match: ModelMatch | None = None
    rate_limit: UnsupportedFeature | None = None


class BackendStatus(ApiModel):
    name: str
    replicas: Int32


class ModelBoosterStatus(ApiModel):
    conditions: list[Condition] | None = None
    backend_statuses: list[BackendStatus] | None = None
    observed_generation: int | None = None


class ModelBooster(ApiModel):
    api_version: Literal["workload.serving.volcano.sh/v1alpha1"] = "workload.serving.volcano.sh/v1alpha1"
    kind: Literal["ModelBooster"] = "ModelBooster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ModelBoosterSpec
    status: ModelBoosterStatus | None = None
