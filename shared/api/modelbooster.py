"""ModelBooster (`workload.serving.volcano.sh/v1alpha1`): the multi-backend API of Kthena v0.1.0.

Field shapes are the reference's, with the additions docs/design/api.md §2 adopts from the newer line
(`obs://` and `ms://` model URIs, worker tolerations, backend runtimeClassName). The four features that
ModelBooster does not support (docs/design/api.md §3) are declared here as free-form objects so that they reach
admission and are rejected with a message, instead of being silently pruned.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from kubernetes.client import V1Affinity, V1EnvFromSource, V1EnvVar, V1Toleration
from pydantic import BeforeValidator, ConfigDict, Field, JsonValue

from shared.api.base import ApiModel, Condition, ObjectMeta
from shared.constants import DNS1123_LABEL_PATTERN, MAX_BACKENDS, MAX_REPLICAS
from shared.durations import GoDuration
from shared.quantity import Quantity
from shared.unsupported import (
    AUTOSCALING_UNSUPPORTED,
    BACKEND_UNSUPPORTED,
    SPEC_UNSUPPORTED,
    WORKER_UNSUPPORTED,
    cel_rules,
)

MODEL_URI_PATTERN = r"^(hf://|s3://|pvc://|obs://|ms://).+"
CACHE_URI_PATTERN = r"^(hostpath://|pvc://).+"
LORA_URI_PATTERN = r"^(hf://|s3://|pvc://).+"

BackendType = Literal["vLLM", "vLLMDisaggregated", "SGLang", "MindIE", "MindIEDisaggregated"]
WorkerType = Literal["server", "prefill", "decode", "controller", "coordinator"]
SUPPORTED_BACKEND_TYPES: tuple[BackendType, ...] = ("vLLM", "vLLMDisaggregated")

# Defaults of docs/design/api.md §6 that hold unconditionally; the CRD declares them too, so the API server applies
# them even when the mutating webhook is down (shared/defaults.py applies them for everyone else).
DEFAULT_ROUTE_WEIGHT = 100
DEFAULT_WORKER_TYPE: WorkerType = "server"
DEFAULT_WORKER_REPLICAS = 1
DEFAULT_WORKER_PODS = 1
DEFAULT_TOLERANCE_PERCENT = 10
# Defaults that apply only with model-level autoscaling (the CRD cannot express the condition).
DEFAULT_SCALE_TO_ZERO_GRACE_PERIOD = "30s"
DEFAULT_COST_EXPANSION_RATE_PERCENT = 200

DnsLabel = Annotated[str, Field(pattern=DNS1123_LABEL_PATTERN)]


def _integral(value: object) -> object:
    """JSON has one number type: `3.0` (or YAML's `1e6`) is an integer to the API server, so it is to us."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Int32 = Annotated[int, Field(json_schema_extra={"format": "int32"}), BeforeValidator(_integral)]
Replicas = Annotated[
    int, Field(ge=0, le=MAX_REPLICAS, json_schema_extra={"format": "int32"}), BeforeValidator(_integral)
]
# A declared-but-unsupported feature: any JSON object, kept so admission can reject it by name.
UnsupportedFeature = Annotated[dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})]


def _default(value: object) -> dict[str, Any]:
    return {"default": value}


def _list_map(*keys: str) -> dict[str, Any]:
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


_ATOMIC: dict[str, Any] = {"x-kubernetes-list-type": "atomic"}


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


class UnsupportedScaleUp(ApiModel):
    """Only `panicPolicy` is named, so that its own rejection (and CEL rule) can reach it."""

    model_config = ConfigDict(extra="allow")

    panic_policy: UnsupportedFeature | None = None


class UnsupportedBehavior(ApiModel):
    """AutoscalingPolicy `behavior`, unsupported: any content is kept and rejected by name."""

    model_config = ConfigDict(extra="allow")

    scale_up: UnsupportedScaleUp | None = None


class AutoscalingPolicySpec(ApiModel):
    """The AutoscalingPolicy `.spec` shape, embedded at model and backend level."""

    model_config = ConfigDict(json_schema_extra=cel_rules(AUTOSCALING_UNSUPPORTED))

    tolerance_percent: Int32 | None = Field(
        default=None, ge=0, le=100, json_schema_extra=_default(DEFAULT_TOLERANCE_PERCENT)
    )
    metrics: list[AutoscalingMetric] = Field(min_length=1)
    behavior: UnsupportedBehavior | None = None


class LoraAdapter(ApiModel):
    name: DnsLabel
    artifact_url: str = Field(alias="artifactURL", pattern=LORA_URI_PATTERN)


class ModelWorker(ApiModel):
    # Its unsupported field is checked on the backend: `workers` is an atomic list (see shared/unsupported.py).

    type: WorkerType | None = Field(default=None, json_schema_extra=_default(DEFAULT_WORKER_TYPE))
    image: str | None = None
    replicas: Replicas | None = Field(default=None, json_schema_extra=_default(DEFAULT_WORKER_REPLICAS))
    pods: Replicas | None = Field(default=None, json_schema_extra=_default(DEFAULT_WORKER_PODS))
    resources: ResourceRequirements | None = None
    affinity: V1Affinity | None = None
    tolerations: list[V1Toleration] | None = Field(default=None, json_schema_extra=_ATOMIC)
    # Engine arguments. Decoded as any JSON so that validation can name a non-object config precisely;
    # the CRD declares it an object whose keys are free.
    config: JsonValue = Field(
        default=None, json_schema_extra={"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    network_topology: UnsupportedFeature | None = None


class ModelBackend(ApiModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(BACKEND_UNSUPPORTED, in_lists={"workers": WORKER_UNSUPPORTED})
    )

    name: DnsLabel
    type: BackendType
    model_uri: str = Field(alias="modelURI", pattern=MODEL_URI_PATTERN)
    cache_uri: str | None = Field(default=None, alias="cacheURI", pattern=CACHE_URI_PATTERN)
    env_from: list[V1EnvFromSource] | None = Field(default=None, json_schema_extra=_ATOMIC)
    env: list[V1EnvVar] | None = Field(default=None, json_schema_extra=_list_map("name"))
    min_replicas: Replicas
    max_replicas: Int32 = Field(ge=1, le=MAX_REPLICAS)
    scaling_cost: Int32 | None = Field(default=None, ge=0)
    route_weight: Int32 | None = Field(default=None, ge=0, le=100, json_schema_extra=_default(DEFAULT_ROUTE_WEIGHT))
    scale_to_zero_grace_period: GoDuration | None = None
    workers: list[ModelWorker] = Field(min_length=1, max_length=1000)
    lora_adapters: list[LoraAdapter] | None = Field(default=None, json_schema_extra=_ATOMIC)
    autoscaling_policy: AutoscalingPolicySpec | None = None
    scheduler_name: str | None = None
    runtime_class_name: str | None = None
    rate_limit: UnsupportedFeature | None = None
    network_topology: UnsupportedFeature | None = None
    topology: UnsupportedFeature | None = None


class ModelBoosterSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra=cel_rules(SPEC_UNSUPPORTED))

    name: str | None = Field(default=None, max_length=64, pattern=DNS1123_LABEL_PATTERN)
    owner: str | None = None
    # At most 16: every backend is a target of the ModelRoute's default rule, which holds 16 at most.
    backends: list[ModelBackend] = Field(min_length=1, max_length=MAX_BACKENDS, json_schema_extra=_list_map("name"))
    autoscaling_policy: AutoscalingPolicySpec | None = None
    cost_expansion_rate_percent: Int32 | None = Field(default=None, ge=0, le=1000)
    model_match: ModelMatch | None = None
    rate_limit: UnsupportedFeature | None = None


class BackendStatus(ApiModel):
    name: str
    replicas: Int32


class ModelBoosterStatus(ApiModel):
    conditions: list[Condition] | None = Field(default=None, json_schema_extra=_list_map("type"))
    backend_statuses: list[BackendStatus] | None = Field(default=None, json_schema_extra=_ATOMIC)
    observed_generation: Annotated[int, BeforeValidator(_integral)] | None = Field(
        default=None, json_schema_extra={"format": "int64"}
    )
    # Our addition: the number of backends, for the `Backends` printer column (JSONPath cannot count).
    backend_count: Int32 | None = Field(default=None, ge=0)


class ModelBooster(ApiModel):
    api_version: Literal["workload.serving.volcano.sh/v1alpha1"] = "workload.serving.volcano.sh/v1alpha1"
    kind: Literal["ModelBooster"] = "ModelBooster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ModelBoosterSpec
    status: ModelBoosterStatus | None = None
