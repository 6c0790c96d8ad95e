"""Inferno custom resources, `inferno.platform.ai/v1alpha1`, in the field shapes of the reference Inferno
controller (its legacy generation), with what we validate instead of remapping and what we add, every addition
optional so that the reference controller's objects keep working (docs/design/inferno.md §2). Python names are
snake_case; `model_dump(by_alias=True, exclude_none=True)` is the wire form.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, Field, model_validator

from shared.api.base import ApiModel, Condition, ObjectMeta, wire_form
from shared.durations import GoDuration, parse_duration

GROUP: Final = "inferno.platform.ai"
VERSION: Final = "v1alpha1"
API_VERSION: Final = "inferno.platform.ai/v1alpha1"  # f"{GROUP}/{VERSION}", spelled out for Literal typing
FINALIZER: Final = "inferno.platform.ai/finalizer"

KIND_ACCELERATOR: Final = "Accelerator"
KIND_MODEL: Final = "Model"
KIND_SERVICE_CLASS: Final = "ServiceClass"
KIND_SERVER: Final = "Server"
KIND_CAPACITY: Final = "Capacity"
KIND_OPTIMIZER: Final = "Optimizer"

PLURAL_ACCELERATORS: Final = "accelerators"
PLURAL_MODELS: Final = "models"
PLURAL_SERVICE_CLASSES: Final = "serviceclasses"
PLURAL_SERVERS: Final = "servers"
PLURAL_CAPACITIES: Final = "capacities"
PLURAL_OPTIMIZERS: Final = "optimizers"

HIGHEST_PRIORITY: Final = 1
LOWEST_PRIORITY: Final = 100
DEFAULT_PRIORITY: Final = LOWEST_PRIORITY

# What the controller does with a targeted Server's decision: publish it on /metrics only (None, the default,
# for KEDA or an HPA to act on), or also set the target's /scale (Scale).
Actuation = Literal["None", "Scale"]
ACTUATION_NONE: Final = "None"
ACTUATION_SCALE: Final = "Scale"
# HPA's default scale-down stabilisation window.
DEFAULT_SCALE_DOWN_STABILIZATION: Final = "5m"
# Runs never overlap, so a short period cannot pile runs up, but a zero one would run back to back. Periods
# under Prometheus's scrape interval measure nothing new (docs/inferno.md).
MIN_INTERVAL_NANOS: Final = 100_000_000
MAX_TREND_HORIZON_NANOS: Final = 3600 * 1_000_000_000

SaturationPolicy = Literal["None", "PriorityExhaustive", "PriorityRoundRobin", "RoundRobin"]
SATURATION_POLICIES: Final[tuple[SaturationPolicy, ...]] = (
    "None",
    "PriorityExhaustive",
    "PriorityRoundRobin",
    "RoundRobin",
)

NonEmptyName = Annotated[str, Field(min_length=1)]

# What the controller does with the performance it learns for a Model (docs/design/inferno.md §15): nothing,
# estimate and report it (the default), or also size with it.
ProfileCorrection = Literal["Off", "Observe", "Apply"]
PROFILE_CORRECTION_OFF: Final = "Off"
PROFILE_CORRECTION_OBSERVE: Final = "Observe"
PROFILE_CORRECTION_APPLY: Final = "Apply"
DEFAULT_PROFILE_CORRECTION: Final = PROFILE_CORRECTION_OBSERVE


class _Wire(ApiModel):
    """camelCase on the wire, unknown fields refused, API-server-strict types (shared.api.base)."""


class ActiveStatus(_Wire):
    """Status shared by five of the six kinds: set once a stateful controller mirrored the object."""

    active: bool | None = Field(default=None, description="true once pushed to a stateful optimizer")


# --- Accelerator -----------------------------------------------------------------------------------------


class PowerSpec(_Wire):
    """Piecewise-linear power model (Watts); informational, never used in a decision."""

    idle: int = Field(ge=0, description="Watts at 0% utilisation")
    full: int = Field(ge=0, description="Watts at 100% utilisation")
    mid_power: int = Field(alias="midPower", ge=0, description="Watts at the inflection utilisation")
    mid_util: float = Field(alias="midUtil", ge=0, le=1, description="utilisation at the inflection point")


class AcceleratorSpec(_Wire):
    name: NonEmptyName = Field(description="accelerator name, referred to by Model data and allocations")
    type: NonEmptyName = Field(description="physical device type; capacity is counted per type")
    multiplicity: int = Field(default=1, ge=1, description="physical cards of `type` in one accelerator")
    mem_size: int | None = Field(default=None, alias="memSize", ge=0, description="GB; informational")
    mem_bw: int | None = Field(default=None, alias="memBW", ge=0, description="GB/s; informational")
    power: PowerSpec | None = None
    cost: float = Field(gt=0, description="cents per hour for one accelerator of this name")


class Accelerator(_Wire):
    api_version: Literal["inferno.platform.ai/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Accelerator"] = KIND_ACCELERATOR
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AcceleratorSpec
    status: ActiveStatus | None = None


# --- Model -----------------------------------------------------------------------------------------------


class ModelAcceleratorPerf(_Wire):
    """Decode performance of one model on one accelerator: ITL(n) = alpha + beta * n ms at batch n."""

    acc: NonEmptyName = Field(description="accelerator name")
    acc_count: int = Field(alias="accCount", ge=1, description="accelerators of that name per replica")
    alpha: float = Field(ge=0, description="ms, base of the per-token decode time")
    beta: float = Field(ge=0, description="ms per batched request, slope of the decode time")
    max_batch_size: int = Field(alias="maxBatchSize", ge=1, description="largest batch at atTokens tokens")
    at_tokens: int = Field(alias="atTokens", ge=1, description="tokens per request when maxBatchSize was measured")

    @model_validator(mode="after")
    def _decode_time_is_positive(self) -> ModelAcceleratorPerf:
        if self.alpha + self.beta <= 0:
            raise ValueError("alpha and beta cannot both be 0: the decode time would be 0 ms")
        return self


class ModelSpec(_Wire):
    name: NonEmptyName = Field(description="model name")
    data: list[ModelAcceleratorPerf] = Field(default_factory=list, description="one entry per accelerator")
    profile_correction: ProfileCorrection | None = Field(
        default=None,
        alias="profileCorrection",
        description="Observe (default): learn alpha/beta per accelerator from measured latency and report it in "
        "the Servers' status; Apply: also size with what was learnt (the data above is the prior); Off: neither",
    )

    @model_validator(mode="after")
    def _one_entry_per_accelerator(self) -> ModelSpec:
        _reject_duplicates([entry.acc for entry in self.data], what="data[].acc")
        return self


class Model(_Wire):
    api_version: Literal["inferno.platform.ai/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Model"] = KIND_MODEL
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ModelSpec
    status: ActiveStatus | None = None


# --- ServiceClass ----------------------------------------------------------------------------------------


class ModelSLO(_Wire):
    """SLO targets of one model in a class; an absent target is no target."""

    model: NonEmptyName = Field(description="model name")
    slo_itl: float | None = Field(default=None, alias="slo-itl", gt=0, description="inter-token latency, ms")
    slo_ttw: float | None = Field(
        default=None, alias="slo-ttw", gt=0, description="request waiting time (95th percentile), ms"
    )
    slo_tps: float | None = Field(default=None, alias="slo-tps", gt=0, description="throughput, tokens/s")


class SaturationSpec(_Wire):
    """When a Server's replicas count as saturated (docs/design/inferno.md §14); absent values: the ServiceClass's,
    else the defaults (0.8, 5)."""

    guard: bool | None = Field(
        default=None, description="false: never overrule the optimiser on saturation (default true)"
    )
    kv_cache_usage: float | None = Field(
        default=None, alias="kvCacheUsage", gt=0, le=1, description="mean KV-cache usage over the pods, 0..1"
    )
    waiting_per_replica: float | None = Field(
        default=None, alias="waitingPerReplica", gt=0, description="requests waiting per replica"
    )


class ServiceClassSpec(_Wire):
    name: NonEmptyName = Field(description="class name, e.g. Premium")
    priority: int = Field(
        default=DEFAULT_PRIORITY,
        ge=HIGHEST_PRIORITY,
        le=LOWEST_PRIORITY,
        description="1 is the highest priority, 100 the lowest",
    )
    data: list[ModelSLO] = Field(default_factory=list, description="SLO targets per model")
    saturation: SaturationSpec | None = Field(
        default=None, description="saturation thresholds for the class's Servers (each Server may override)"
    )

    @model_validator(mode="after")
    def _one_target_per_model(self) -> ServiceClassSpec:
        _reject_duplicates([target.model for target in self.data], what="data[].model")
        return self


class ServiceClass(_Wire):
    api_version: Literal["inferno.platform.ai/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["ServiceClass"] = KIND_SERVICE_CLASS
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ServiceClassSpec
    status: ActiveStatus | None = None


# --- Server ----------------------------------------------------------------------------------------------


class ServerLoad(_Wire):
    arrival_rate: float = Field(alias="arrivalRate", ge=0, description="requests per minute")
    avg_length: int = Field(alias="avgLength", ge=0, description="tokens per request")
    arrival_cov: float | None = Field(
        default=None, alias="arrivalCOV", ge=0, description="coefficient of variation of inter-arrival times"
    )
    service_cov: float | None = Field(
        default=None, alias="serviceCOV", ge=0, description="coefficient of variation of service times"
    )


class AllocationData(_Wire):
    accelerator: str = Field(description='accelerator name; "" means no allocation')
    num_replicas: int = Field(alias="numReplicas", ge=0)
    max_batch: int | None = Field(default=None, alias="maxBatch", ge=0)
    cost: float | None = Field(default=None, ge=0, description="cents per hour")
    itl_average: float | None = Field(default=None, alias="itlAverage", ge=0, description="ms")
    wait_average: float | None = Field(default=None, alias="waitAverage", ge=0, description="ms")
    load: ServerLoad | None = None


class TargetRef(_Wire):
    """The workload a Server stands for: a ModelServing (a ModelBooster backend's `<model>-<backend>`) or any
    object with a `scale` subresource, in the Server's namespace."""

    api_version: str | None = Field(
        default=None,
        alias="apiVersion",
        max_length=316,  # a 253-character group, "/", a version
        pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$",
        description="group/version of the target; default: that of the kind when known "
        "(ModelServing, Deployment, StatefulSet, ReplicaSet)",
    )
    kind: str = Field(
        max_length=63, pattern=r"^[A-Z][A-Za-z0-9]*$", description="kind of the target, e.g. ModelServing"
    )
    name: str = Field(
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="name of the target in the Server's namespace",
    )


class TrendSpec(_Wire):
    """Size for the arrival rate `horizon` ahead when it is rising (docs/design/inferno.md §16)."""

    horizon: GoDuration = Field(description="how far ahead to size, e.g. 2m (a replica's start-up time)")

    @model_validator(mode="after")
    def _horizon_is_sane(self) -> TrendSpec:
        nanos = parse_duration(self.horizon)
        if nanos <= 0 or nanos > MAX_TREND_HORIZON_NANOS:
            raise ValueError(f"horizon {self.horizon!r} must be > 0 and at most 1h")
        return self


DEFAULT_MIN_RATIO: Final = 0.1
DEFAULT_MAX_RATIO: Final = 10.0
PREFILL: Final = "prefill"
DECODE: Final = "decode"


class RoleScaling(_Wire):
    """One role of a disaggregated target, scaled through its `replicas` in the ModelServing's
    `spec.template.roles` (docs/design/inferno.md §19)."""

    name: str | None = Field(
        default=None,
        max_length=12,  # Kthena's role names
        pattern=r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$",
        description="the role's name in spec.template.roles of the ModelServing (default: prefill, decode)",
    )
    min_replicas: int | None = Field(
        default=None,
        alias="minReplicas",
        ge=0,
        le=1_000_000,
        description="fewest replicas of the role (default 1); never below its gangPolicy.minRoleReplicas, which "
        "Kthena's admission requires and cannot change",
    )
    max_replicas: int = Field(alias="maxReplicas", ge=1, le=1_000_000, description="most replicas of the role")

    @model_validator(mode="after")
    def _bounds_in_order(self) -> RoleScaling:
        if self.min_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas ({self.min_replicas}) must not exceed maxReplicas ({self.max_replicas})")
        return self

    @property
    def floor(self) -> int:
        return 1 if self.min_replicas is None else self.min_replicas


class DisaggregationSpec(_Wire):
    """A Server whose target is a disaggregated (prefill/decode) ModelServing: Scale sets its two roles'
    replicas apart, with prefill replicas per decode replica kept within [minRatio, maxRatio]
    (docs/design/inferno.md §17, §19)."""

    prefill: RoleScaling = Field(description="the prefill role: sized by its prompt-token rate (or the ratio)")
    decode: RoleScaling = Field(description="the decode role: sized by the optimiser's decision for this Server")
    min_ratio: float | None = Field(
        default=None, alias="minRatio", ge=0, allow_inf_nan=False, description="prefill per decode, at least (0.1)"
    )
    max_ratio: float | None = Field(
        default=None, alias="maxRatio", gt=0, allow_inf_nan=False, description="prefill per decode, at most (10)"
    )
    prefill_tokens_per_second: float | None = Field(
        default=None,
        alias="prefillTokensPerSecond",
        gt=0,
        allow_inf_nan=False,
        description="prompt tokens per second one prefill replica takes; without it the prefill/decode ratio is "
        "learnt from the prefill pods' saturation",
    )

    @property
    def ratio_bounds(self) -> tuple[float, float]:
        low = DEFAULT_MIN_RATIO if self.min_ratio is None else self.min_ratio
        return low, DEFAULT_MAX_RATIO if self.max_ratio is None else self.max_ratio

    @property
    def prefill_role(self) -> str:
        return self.prefill.name or PREFILL

    @property
    def decode_role(self) -> str:
        return self.decode.name or DECODE

    @model_validator(mode="after")
    def _consistent(self) -> DisaggregationSpec:
        if self.prefill_role == self.decode_role:
            raise ValueError(f"prefill.name and decode.name must name two roles, not both {self.prefill_role!r}")
        low, high = self.ratio_bounds
        if low > high:
            raise ValueError(f"minRatio ({low:g}) must not exceed maxRatio ({high:g})")
        if self.prefill.floor > high * self.decode.max_replicas:
            raise ValueError(
                f"prefill.minReplicas ({self.prefill.floor}) over decode.maxReplicas ({self.decode.max_replicas}) "
                f"exceeds maxRatio ({high:g}): no replica counts keep the ratio"
            )
        if self.prefill.max_replicas < low * self.decode.floor:
            raise ValueError(
                f"prefill.maxReplicas ({self.prefill.max_replicas}) over decode.minReplicas ({self.decode.floor}) "
                f"is below minRatio ({low:g}): no replica counts keep the ratio"
            )
        return self


class ServerSpec(_Wire):
    name: NonEmptyName = Field(description="server name; the key of the optimizer's solution")
    class_name: NonEmptyName = Field(alias="class", description="service class name")
    model: NonEmptyName = Field(description="model name")
    current_alloc: AllocationData | None = Field(
        default=None, alias="currentAlloc", description="observed allocation; its load is what is sized for"
    )
    desired_alloc: AllocationData | None = Field(
        default=None, alias="desiredAlloc", description="written by the controller from the optimizer"
    )
    target_ref: TargetRef | None = Field(
        default=None,
        alias="targetRef",
        description="the workload this server stands for: each run reads its replicas (and, with Prometheus, "
        "its load) into currentAlloc and publishes the decision for it",
    )
    actuation: Actuation | None = Field(
        default=None,
        description="None (default): publish the decision on /metrics only; Scale: also set the target's "
        "/scale to desiredAlloc.numReplicas within the bounds, where the target (or the ModelBooster that controls "
        "it) names this Server in its inferno.platform.ai/scaled-by annotation and no other scaler drives it",
    )
    min_replicas: int | None = Field(
        default=None,
        alias="minReplicas",
        ge=0,
        description="lowest replica count Scale sets on a target that is not a ModelBooster's (default 1)",
    )
    max_replicas: int | None = Field(
        default=None,
        alias="maxReplicas",
        ge=1,
        description="highest replica count Scale sets on a target that is not a ModelBooster's "
        "(required there; the operator's ceiling applies too)",
    )
    scale_down_stabilization: GoDuration | None = Field(
        default=None,
        alias="scaleDownStabilization",
        description="Scale lowers replicas only to the highest decision of this window (default 5m)",
    )
    saturation: SaturationSpec | None = Field(
        default=None, description="saturation thresholds for this Server (default: its ServiceClass's)"
    )
    trend: TrendSpec | None = Field(default=None, description="size for the rising arrival rate ahead (off)")
    disaggregation: DisaggregationSpec | None = Field(
        default=None,
        description="the target is a disaggregated ModelServing: Scale sets its prefill and decode roles' replicas "
        "apart, within a ratio, instead of its /scale",
    )

    @model_validator(mode="after")
    def _bounds_in_order(self) -> ServerSpec:
        if self.disaggregation is not None and (self.target_ref is None or self.target_ref.kind != "ModelServing"):
            raise ValueError(
                "disaggregation needs targetRef naming the ModelServing whose prefill and decode roles it scales"
            )
        if self.min_replicas is not None and self.max_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas ({self.min_replicas}) must not exceed maxReplicas ({self.max_replicas})")
        if self.scale_down_stabilization is not None and parse_duration(self.scale_down_stabilization) < 0:
            raise ValueError(f"scaleDownStabilization {self.scale_down_stabilization!r} must not be negative")
        return self


class SaturationStatus(_Wire):
    kv_cache_usage: float | None = Field(default=None, alias="kvCacheUsage", description="mean over pods, 0..1")
    waiting: float | None = Field(default=None, description="requests waiting, all pods")
    running: float | None = Field(default=None, description="requests running, all pods")
    pressure: float | None = Field(default=None, description="the larger signal over its threshold; 1 = saturated")


class ProfileParameters(_Wire):
    alpha: float = Field(description="ms")
    beta: float = Field(description="ms per batched request")


class PerformanceStatus(_Wire):
    """The profile the last run sized with, what was measured, and how far the typed profile is off."""

    accelerator: str = Field(description="the accelerator the Server runs on")
    in_use: Literal["profile", "estimate"] = Field(alias="inUse", description="what the last run sized with")
    profile: ProfileParameters = Field(description="as typed in the Model")
    estimate: ProfileParameters = Field(description="learnt online (the typed profile is its prior)")
    observations: int = Field(ge=0, description="measurements the estimate took in")
    rejected: int = Field(ge=0, description="measurements it refused (outliers, invalid)")
    batch: float | None = Field(default=None, description="requests running per replica, measured")
    measured_itl: float | None = Field(default=None, alias="measuredItl", description="mean ITL, ms")
    measured_ttft: float | None = Field(default=None, alias="measuredTtft", description="mean TTFT, ms")
    predicted_itl: float | None = Field(
        default=None, alias="predictedItl", description="the typed profile's ITL at the measured batch, ms"
    )
    drift: float | None = Field(
        default=None, description="(measured - predicted) / predicted ITL: how far the typed profile is off"
    )


class TrendStatus(_Wire):
    measured: float = Field(description="arrival rate measured, requests/min")
    forecast: float = Field(description="arrival rate forecast at the horizon, requests/min")
    error: float | None = Field(default=None, description="weighted mean absolute percentage error, one step")


class RoleStatus(_Wire):
    """One role of a disaggregated target after the last run."""

    name: str = Field(description="the role's name in the ModelServing")
    side: Literal["prefill", "decode"]
    replicas: int = Field(ge=0, description="the role's replicas after the last run")
    need: int = Field(ge=0, description="what the role's own load asked for, before the guardrail, ratio and bounds")
    kv_cache_usage: float | None = Field(default=None, alias="kvCacheUsage", description="mean over its pods, 0..1")
    waiting: float | None = Field(default=None, description="requests waiting, its pods")
    running: float | None = Field(default=None, description="requests running, its pods")
    pressure: float | None = Field(default=None, description="the larger signal over its threshold; 1 = saturated")
    prompt_tokens_per_second: float | None = Field(
        default=None, alias="promptTokensPerSecond", description="prefill: prompt tokens per second, measured"
    )


class ServerStatus(ActiveStatus):
    conditions: list[Condition] | None = Field(
        default=None,
        description="LoadMeasured, ScalingActive, SaturationGuard: what the last run measured and did",
    )
    last_scale_time: str | None = Field(
        default=None, alias="lastScaleTime", description="RFC 3339 time the controller last changed the target"
    )
    saturation: SaturationStatus | None = None
    performance: PerformanceStatus | None = None
    trend: TrendStatus | None = None
    roles: list[RoleStatus] | None = Field(default=None, description="a disaggregated target's roles")
    ratio: float | None = Field(
        default=None, description="a disaggregated target: prefill replicas per decode replica after the last run"
    )
    learnt_ratio: float | None = Field(
        default=None,
        alias="learntRatio",
        description="without prefillTokensPerSecond: the prefill/decode ratio learnt from the prefill pods' pressure",
    )


class Server(_Wire):
    api_version: Literal["inferno.platform.ai/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Server"] = KIND_SERVER
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ServerSpec
    status: ServerStatus | None = None


# --- Capacity --------------------------------------------------------------------------------------------


class AcceleratorCount(_Wire):
    type: NonEmptyName = Field(description="physical accelerator type")
    count: int = Field(default=0, ge=0, description="free physical units of that type")


class CapacitySpec(_Wire):
    count: list[AcceleratorCount] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_count_per_type(self) -> CapacitySpec:
        _reject_duplicates([entry.type for entry in self.count], what="count[].type")
        return self


class Capacity(_Wire):
    api_version: Literal["inferno.platform.ai/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Capacity"] = KIND_CAPACITY
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CapacitySpec
    status: ActiveStatus | None = None


# --- Optimizer -------------------------------------------------------------------------------------------


class OptimizerSpec(_Wire):
    unlimited: bool = Field(description="ignore capacity (capacity planning, cloud)")
    heterogeneous: bool = Field(description="allow mixed accelerators within one server (MILP only)")
    milp_solver: bool = Field(alias="milpSolver", description="use the MILP solver instead of greedy")
    use_cplex: bool = Field(alias="useCplex", description="accepted for compatibility; HiGHS solves both")
    delayed_best_effort: bool | None = Field(
        default=None, alias="delayedBestEffort", description="best-effort only after all priority groups"
    )
    saturation_policy: SaturationPolicy | None = Field(
        default=None, alias="saturationPolicy", description="what to do with servers that do not fit"
    )


class OptimizerData(_Wire):
    optimizer: OptimizerSpec


class OptimizerObjectSpec(_Wire):
    optimize: bool = Field(description="set to true to request one optimisation run")
    data: OptimizerData
    interval: GoDuration | None = Field(
        default=None,
        description="also run every interval (e.g. 60s), measuring targeted Servers first; at least 100ms",
    )

    @model_validator(mode="after")
    def _interval_is_sane(self) -> OptimizerObjectSpec:
        if self.interval is not None and parse_duration(self.interval) < MIN_INTERVAL_NANOS:
            raise ValueError(f"interval {self.interval!r} is shorter than 100ms")
        return self


class OptimizerStatus(_Wire):
    done: bool | None = Field(default=None, description="set after a successful run")
    conditions: list[Condition] | None = None
    last_run_time: str | None = Field(default=None, alias="lastRunTime", description="RFC 3339 start of the run")
    last_run_duration_seconds: float | None = Field(default=None, alias="lastRunDurationSeconds", ge=0)
    total_cost: float | None = Field(default=None, alias="totalCost", ge=0, description="cents per hour")
    unallocated_servers: list[str] | None = Field(
        default=None, alias="unallocatedServers", description="servers the last run could not place"
    )


class Optimizer(_Wire):
    api_version: Literal["inferno.platform.ai/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["Optimizer"] = KIND_OPTIMIZER
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: OptimizerObjectSpec
    status: OptimizerStatus | None = None


InfernoObject = Accelerator | Model | ServiceClass | Server | Capacity | Optimizer

# (kind, plural, root model) for the CRD generator and for dispatching parsed objects by kind.
INFERNO_KINDS: Final[list[tuple[str, str, type[BaseModel]]]] = [
    (KIND_ACCELERATOR, PLURAL_ACCELERATORS, Accelerator),
    (KIND_MODEL, PLURAL_MODELS, Model),
    (KIND_SERVICE_CLASS, PLURAL_SERVICE_CLASSES, ServiceClass),
    (KIND_SERVER, PLURAL_SERVERS, Server),
    (KIND_CAPACITY, PLURAL_CAPACITIES, Capacity),
    (KIND_OPTIMIZER, PLURAL_OPTIMIZERS, Optimizer),
]
# `kubectl get servers` is ambiguous where Linkerd is installed (servers.policy.linkerd.io, short name `srv`):
# Inferno's Server gets a short name of its own.
SHORT_NAMES: Final[dict[str, tuple[str, ...]]] = {KIND_SERVER: ("infsrv",)}


def _reject_duplicates(values: list[str], *, what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what}: duplicate value {value!r}")
        seen.add(value)


def dump_wire(obj: BaseModel) -> dict[str, Any]:
    """The JSON form written to the API server (`ApiModel.to_wire` for any model)."""
    return wire_form(obj)
