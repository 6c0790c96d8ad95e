"""ModelBooster (`workload.serving.volcano.sh/v1alpha1`): the multi-backend API of Kthena v0.1.0, and in the same
version the single-backend `spec.backend` of Kthena v0.2-v0.4 (`minReplicas`/`maxReplicas`, model-level
autoscaling) and of Kthena v1.0 (`replicas`) (docs/design/api.md §8).

Field shapes are the reference's, with the additions docs/design/api.md §2 adopts from the newer line
(`obs://` and `ms://` model URIs, worker tolerations, backend runtimeClassName). The four features that
ModelBooster does not support (docs/design/api.md §3) are declared here as free-form objects so that they reach
admission and are rejected with a message, instead of being silently pruned.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, Self, cast

from kubernetes.client import V1Affinity, V1EnvFromSource, V1EnvVar, V1Toleration
from pydantic import (
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from shared import backend_shape
from shared.api.base import ApiModel, Condition, ObjectMeta
from shared.constants import DNS1123_LABEL_PATTERN, MAX_BACKENDS, MAX_REPLICAS
from shared.durations import GoDuration
from shared.json_values import AnyJson, JsonInteger
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
SUPPORTED_BACKEND_TYPES: tuple[BackendType, ...] = ("vLLM", "vLLMDisaggregated", "SGLang")

# Defaults of docs/design/api.md §6 that hold unconditionally; the CRD declares them too, so the API server applies
# them even when the mutating webhook is down (shared/defaults.py applies them for everyone else).
DEFAULT_ROUTE_WEIGHT = 100
DEFAULT_WORKER_TYPE: WorkerType = "server"
DEFAULT_WORKER_REPLICAS = 1
DEFAULT_WORKER_PODS = 1
DEFAULT_TOLERANCE_PERCENT = 10
# Kthena v1.0 leaves an unset scheduler out of the ModelServing, whose CRD then defaults it to Volcano; we write
# the ModelServing's schedulerName always (v0.1.0's child contract, "" for the cluster's default scheduler), so
# a single backend (Kthena v0.2 and later) defaults to what it ran under Kthena (docs/design/api.md §8).
DEFAULT_SINGLE_BACKEND_SCHEDULER = "volcano"
# Defaults that apply only with model-level autoscaling (the CRD cannot express the condition).
DEFAULT_SCALE_TO_ZERO_GRACE_PERIOD = "30s"
DEFAULT_COST_EXPANSION_RATE_PERCENT = 200

DnsLabel = Annotated[str, Field(pattern=DNS1123_LABEL_PATTERN)]


_INT32: Final = {"format": "int32"}
Int32 = Annotated[int, Field(json_schema_extra=_INT32), JsonInteger()]
Replicas = Annotated[int, Field(ge=0, le=MAX_REPLICAS, json_schema_extra=_INT32), JsonInteger()]
# An optional integer is given its bounds by JsonInteger: pydantic checks the `Field` bounds of an optional
# field in Python, on every decode.
Percent = Annotated[int, Field(json_schema_extra=_INT32), JsonInteger(ge=0, le=100)]
NonNegativeInt32 = Annotated[int, Field(json_schema_extra=_INT32), JsonInteger(ge=0)]
ExpansionPercent = Annotated[int, Field(json_schema_extra=_INT32), JsonInteger(ge=0, le=1000)]
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

    tolerance_percent: Percent | None = Field(default=None, json_schema_extra=_default(DEFAULT_TOLERANCE_PERCENT))
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
    config: AnyJson = Field(
        default=None, json_schema_extra={"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    network_topology: UnsupportedFeature | None = None


# A backend in either shape (docs/design/api.md §8) is assembled from these parts, so that each field is
# declared once and `spec.backends[]` keeps the reference's field order (which is also the order decoding
# errors are reported in). No docstrings on them: a model's docstring becomes its CRD description.


class _Source(ApiModel):
    name: DnsLabel
    type: BackendType
    model_uri: str = Field(alias="modelURI", pattern=MODEL_URI_PATTERN)
    cache_uri: str | None = Field(default=None, alias="cacheURI", pattern=CACHE_URI_PATTERN)
    env_from: list[V1EnvFromSource] | None = Field(default=None, json_schema_extra=_ATOMIC)
    env: list[V1EnvVar] | None = Field(default=None, json_schema_extra=_list_map("name"))


class _Scaling(ApiModel):  # v0.1.0 only
    min_replicas: Replicas
    max_replicas: Int32 = Field(ge=1, le=MAX_REPLICAS)
    scaling_cost: NonNegativeInt32 | None = None
    route_weight: Percent | None = Field(default=None, json_schema_extra=_default(DEFAULT_ROUTE_WEIGHT))
    scale_to_zero_grace_period: GoDuration | None = None


class _ReplicaChoice(ApiModel):  # spec.backend only: Kthena v1.0's count, or Kthena v0.2-v0.4's range
    replicas: Replicas | None = None
    min_replicas: Replicas | None = None
    max_replicas: Annotated[int, Field(ge=1, le=MAX_REPLICAS, json_schema_extra=_INT32), JsonInteger()] | None = None


class _Workers(ApiModel):
    workers: list[ModelWorker] = Field(min_length=1, max_length=1000)


class _Adapters(ApiModel):  # v0.1.0 only
    lora_adapters: list[LoraAdapter] | None = Field(default=None, json_schema_extra=_ATOMIC)
    autoscaling_policy: AutoscalingPolicySpec | None = None


class _Placement(ApiModel):
    scheduler_name: str | None = None
    runtime_class_name: str | None = None
    rate_limit: UnsupportedFeature | None = None
    network_topology: UnsupportedFeature | None = None
    topology: UnsupportedFeature | None = None


_BACKEND_RULES: Final = cel_rules(BACKEND_UNSUPPORTED, in_lists={"workers": WORKER_UNSUPPORTED})


# Pydantic orders fields base-most first, i.e. from the last base listed to the first.
class ModelBackend(_Placement, _Adapters, _Workers, _Scaling, _Source):
    # An entry of `spec.backends` (Kthena v0.1.0), and the internal form of every backend.
    model_config = ConfigDict(json_schema_extra=_BACKEND_RULES)


class SingleBackend(_Placement, _Workers, _ReplicaChoice, _Source):
    """One backend: replicas (Kthena v1.0) or minReplicas and maxReplicas (Kthena v0.2-v0.4); set backend or backends"""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *backend_shape.single_backend_cel_rules(),
                *_BACKEND_RULES["x-kubernetes-validations"],
            ]
        }
    )

    scheduler_name: str | None = Field(default=None, json_schema_extra=_default(DEFAULT_SINGLE_BACKEND_SCHEDULER))

    def as_backend(self, policy: AutoscalingPolicySpec | None) -> ModelBackend:
        """The internal form. With `replicas` (Kthena v1.0), a backend whose replica range is `replicas` exactly,
        which without autoscaling is what it runs, and no policy. With `minReplicas`/`maxReplicas` (Kthena
        v0.2-v0.4), that range, scaled by the model's `policy` as the backend's own (Kthena v0.4.0 names its
        autoscaling objects after the backend). Built without validation: the range may be 0..0, which
        `spec.backends` cannot say."""
        shared = {name: getattr(self, name) for name in _SHARED_BACKEND_FIELDS}
        if self.replicas is not None:
            low = high = self.replicas
            policy = None  # refused beside `replicas` (backend_shape.autoscaling_errors); read without it
        else:
            low, high = self.min_replicas or 0, self.max_replicas or 0
        return ModelBackend.model_construct(**shared, min_replicas=low, max_replicas=high, autoscaling_policy=policy)


# The fields a single backend passes on to its internal form as they are (all but its replica fields).
_SHARED_BACKEND_FIELDS: Final = tuple(
    name for name in SingleBackend.model_fields if name not in _ReplicaChoice.model_fields
)


def _wire_names(model: type[ApiModel]) -> frozenset[str]:
    return frozenset(field.alias or name for name, field in model.model_fields.items())


# The fields only one backend shape has, by wire name (to say where a misplaced one belongs).
LIST_ONLY_FIELDS: Final = _wire_names(ModelBackend) - _wire_names(SingleBackend)
SINGLE_ONLY_FIELDS: Final = _wire_names(SingleBackend) - _wire_names(ModelBackend)


def _spec_rules() -> dict[str, Any]:
    rules = cel_rules(SPEC_UNSUPPORTED)
    rules["x-kubernetes-validations"] = [*backend_shape.cel_rules(), *rules["x-kubernetes-validations"]]
    return rules


# Which of (replicas, minReplicas, maxReplicas) a well-formed single backend sets: the count, or the range.
_ONE_REPLICA_FORM: Final = frozenset({(True, False, False), (False, True, True)})


class _NullNamesNoShape:
    """A JSON null names no backend shape (the API server prunes it), rather than an invalid list: the field
    takes None, in native code, which `ModelBoosterSpec` replaces. (`backend` is optional, so null is None.)"""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.nullable_schema(handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(cast(core_schema.NullableSchema, schema)["schema"])  # the list's: absence is not a value


class ModelBoosterSpec(ApiModel):
    # Exactly one of `backend` and `backends` is given (shared/backend_shape.py). Once decoded, `backends`
    # holds every backend whichever was given: the single backend in its internal form (`as_backend`), so
    # validation and synthesis read one list. `backend` tells which shape the user wrote. With a single
    # backend, `autoscaling_policy` (Kthena v0.2-v0.4's, model-level on the wire) is read as that backend's own
    # and is None here: model-level autoscaling is Kthena v0.1.0's optimizer over a list of backends.

    model_config = ConfigDict(json_schema_extra=_spec_rules())

    # The model name clients send (the ModelRoute's `modelName`); metadata.name when unset.
    name: str | None = Field(default=None, max_length=64, pattern=DNS1123_LABEL_PATTERN)
    owner: str | None = None
    backend: SingleBackend | None = None
    # At most 16: every backend is a target of the ModelRoute's default rule, which holds 16 at most.
    backends: Annotated[list[ModelBackend], _NullNamesNoShape()] = Field(
        default_factory=list, min_length=1, max_length=MAX_BACKENDS, json_schema_extra=_list_map("name")
    )
    autoscaling_policy: AutoscalingPolicySpec | None = None
    cost_expansion_rate_percent: ExpansionPercent | None = None
    model_match: ModelMatch | None = None
    rate_limit: UnsupportedFeature | None = None

    @model_validator(mode="after")
    def _one_list_of_backends(self) -> Self:
        # `backends: null` decodes as None (`_NullNamesNoShape`), and is replaced here whichever way this goes.
        if self.backend is None and not self.backends:
            raise ValueError(backend_shape.NEITHER_DETAIL)
        if self.backend is not None and self.backends:
            raise ValueError(f"spec.backends {backend_shape.BOTH_DETAIL}")
        if self.backend is not None:
            # Validation reports a wrong replica form first, at its field (shared/backend_shape.py); this keeps a
            # model decoded without validation from holding a backend with no replica count.
            single = self.backend
            given = (single.replicas is not None, single.min_replicas is not None, single.max_replicas is not None)
            if given not in _ONE_REPLICA_FORM:
                (problem, *_) = backend_shape.replica_form_errors(*given)
                raise ValueError(f"{problem.path}: {problem.detail}")
            self.backends = [single.as_backend(self.autoscaling_policy)]
            self.autoscaling_policy = None
        return self

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """Serialized in the shape the user wrote: the internal list never replaces a single backend, and the
        one backend's policy is written back under `spec` (a policy refused beside `replicas` is not kept)."""
        data: dict[str, Any] = handler(self)
        if self.backend is not None:
            data.pop("backends", None)
            policy = self.backends[0].autoscaling_policy if self.backends else None
            if policy is not None:
                key = backend_shape.AUTOSCALING_FIELD if info.by_alias is not False else "autoscaling_policy"
                data[key] = policy.model_dump(mode=info.mode, by_alias=info.by_alias, exclude_none=info.exclude_none)
        return data

    def route_model_name(self, model: str) -> str:
        """The ModelRoute's `modelName` for ModelBooster `model`: `spec.name` when set (docs/design/api.md §8)."""
        return self.name or model


class BackendStatus(ApiModel):
    name: str
    replicas: Int32


class ModelBoosterStatus(ApiModel):
    conditions: list[Condition] | None = Field(default=None, json_schema_extra=_list_map("type"))
    backend_statuses: list[BackendStatus] | None = Field(default=None, json_schema_extra=_ATOMIC)
    observed_generation: Annotated[int, JsonInteger()] | None = Field(
        default=None, json_schema_extra={"format": "int64"}
    )
    # Our addition: the number of backends, for the `Backends` printer column (JSONPath cannot count).
    backend_count: NonNegativeInt32 | None = None


class ModelBooster(ApiModel):
    api_version: Literal["workload.serving.volcano.sh/v1alpha1"] = "workload.serving.volcano.sh/v1alpha1"
    kind: Literal["ModelBooster"] = "ModelBooster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ModelBoosterSpec
    status: ModelBoosterStatus | None = None
