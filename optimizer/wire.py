"""The optimizer's REST JSON (legacy generation, optimizer v0.4/v0.5) and its conversions, read as Go's decoder
reads it because the reference's clients rely on that (docs/design/inferno.md §10).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from optimizer.optimize import Solution
from optimizer.system import (
    Accelerator,
    Allocation,
    Load,
    ModelTarget,
    OptimizerFlags,
    PerfData,
    Power,
    Server,
    ServiceClass,
    System,
)
from shared.api.inferno import DEFAULT_PRIORITY, HIGHEST_PRIORITY, LOWEST_PRIORITY, SaturationPolicy


@functools.cache
def _key_map(model: type[BaseModel]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for name, info in model.model_fields.items():
        alias = info.alias or name
        keys[alias.lower()] = alias
        keys[name] = name  # Python-side construction by field name
    return keys


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _match_keys_case_insensitively(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        keys = _key_map(cls)
        folded: dict[str, Any] = {}
        for key, value in data.items():
            canonical = keys.get(key) or (keys.get(key.lower()) if isinstance(key, str) else None)
            if canonical is None:
                continue  # unknown keys are ignored, as by Go's encoding/json
            if key == canonical or canonical not in folded:  # an exact match beats a folded one
                folded[canonical] = value
        return folded

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def _unique(values: Iterable[str], *, what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"duplicate {what} {value!r}")
        seen.add(value)


# --- accelerators and capacity ---------------------------------------------------------------------------


class WirePower(_Wire):
    idle: int = Field(default=0, ge=0)
    full: int = Field(default=0, ge=0)
    mid_power: int = Field(default=0, alias="midPower", ge=0)
    mid_util: float = Field(default=0.0, alias="midUtil", ge=0, le=1)


class WireAccelerator(_Wire):
    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    multiplicity: int = Field(default=1, ge=1)
    mem_size: int = Field(default=0, alias="memSize", ge=0)
    mem_bw: int = Field(default=0, alias="memBW", ge=0)
    power: WirePower | None = None
    cost: float = Field(gt=0)


class WireAcceleratorData(_Wire):
    accelerators: list[WireAccelerator] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        _unique((a.name for a in self.accelerators), what="accelerator name")
        return self


class WireCount(_Wire):
    type: str = Field(min_length=1)
    count: int = Field(default=0, ge=0)


class WireCapacityData(_Wire):
    count: list[WireCount] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_types(self) -> Self:
        _unique((c.type for c in self.count), what="capacity type")
        return self


# --- models and service classes --------------------------------------------------------------------------


class WirePerf(_Wire):
    name: str = Field(min_length=1)
    acc: str = Field(min_length=1)
    acc_count: int = Field(default=1, alias="accCount", ge=1)
    alpha: float = Field(default=0.0, ge=0)
    beta: float = Field(default=0.0, ge=0)
    max_batch_size: int = Field(alias="maxBatchSize", ge=1)
    at_tokens: int = Field(alias="atTokens", ge=1)

    @model_validator(mode="after")
    def _decode_time_is_positive(self) -> Self:
        if self.alpha + self.beta <= 0:
            raise ValueError("alpha and beta cannot both be 0: the decode time would be 0 ms")
        return self


class WireModelData(_Wire):
    models: list[WirePerf] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_pairs(self) -> Self:
        _unique((f"{p.name}/{p.acc}" for p in self.models), what="model/accelerator pair")
        return self


class WireTarget(_Wire):
    model: str = Field(min_length=1)
    slo_itl: float = Field(default=0.0, alias="slo-itl", ge=0)
    slo_ttw: float = Field(default=0.0, alias="slo-ttw", ge=0)
    slo_tps: float = Field(default=0.0, alias="slo-tps", ge=0)


class WireServiceClass(_Wire):
    name: str = Field(min_length=1)
    priority: int = Field(default=DEFAULT_PRIORITY, ge=HIGHEST_PRIORITY, le=LOWEST_PRIORITY)
    model_targets: list[WireTarget] = Field(default_factory=list, alias="modelTargets")

    @model_validator(mode="after")
    def _unique_models(self) -> Self:
        _unique((t.model for t in self.model_targets), what="target model")
        return self


class WireServiceClassData(_Wire):
    service_classes: list[WireServiceClass] = Field(default_factory=list, alias="serviceClasses")

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        _unique((c.name for c in self.service_classes), what="service class name")
        return self


class WireFlatTarget(_Wire):
    """The body of the singular /addServiceClassModelTarget (optimizer <= v0.3, the reference controller)."""

    name: str = Field(min_length=1)
    priority: int = Field(default=DEFAULT_PRIORITY, ge=HIGHEST_PRIORITY, le=LOWEST_PRIORITY)
    model: str = Field(min_length=1)
    slo_itl: float = Field(default=0.0, alias="slo-itl", ge=0)
    slo_ttw: float = Field(default=0.0, alias="slo-ttw", ge=0)
    slo_tps: float = Field(default=0.0, alias="slo-tps", ge=0)


# --- servers ---------------------------------------------------------------------------------------------


class WireLoad(_Wire):
    arrival_rate: float = Field(default=0.0, alias="arrivalRate", ge=0)
    avg_length: int = Field(default=0, alias="avgLength", ge=0)
    arrival_cov: float = Field(default=0.0, alias="arrivalCOV", ge=0)
    service_cov: float = Field(default=0.0, alias="serviceCOV", ge=0)


class WireAllocation(_Wire):
    accelerator: str = ""
    num_replicas: int = Field(default=0, alias="numReplicas", ge=0)
    max_batch: int = Field(default=0, alias="maxBatch", ge=0)
    cost: float = Field(default=0.0, ge=0)
    itl_average: float = Field(default=0.0, alias="itlAverage", ge=0)
    wait_average: float = Field(default=0.0, alias="waitAverage", ge=0)
    load: WireLoad = Field(default_factory=WireLoad)


class WireServer(_Wire):
    name: str = Field(min_length=1)
    class_name: str = Field(default="", alias="class")
    model: str = Field(min_length=1)
    keep_accelerator: bool = Field(default=False, alias="keepAccelerator")
    min_num_replicas: int = Field(default=0, alias="minNumReplicas", ge=0)
    max_batch_size: int = Field(default=0, alias="maxBatchSize", ge=0)
    current_alloc: WireAllocation = Field(default_factory=WireAllocation, alias="currentAlloc")
    desired_alloc: WireAllocation = Field(default_factory=WireAllocation, alias="desiredAlloc")


class WireServerData(_Wire):
    servers: list[WireServer] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        _unique((s.name for s in self.servers), what="server name")
        return self


# --- optimizer flags and the whole system ----------------------------------------------------------------


class WireOptimizerFlags(_Wire):
    unlimited: bool = False
    heterogeneous: bool = False
    milp_solver: bool = Field(default=False, alias="milpSolver")
    use_cplex: bool = Field(default=False, alias="useCplex")
    delayed_best_effort: bool = Field(default=False, alias="delayedBestEffort")
    saturation_policy: SaturationPolicy = Field(default="None", alias="saturationPolicy")

    @field_validator("saturation_policy", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return "None" if value == "" else value


class WireOptimizerData(_Wire):
    optimizer: WireOptimizerFlags = Field(default_factory=WireOptimizerFlags)


class WireSystemSpec(_Wire):
    accelerator_data: WireAcceleratorData = Field(default_factory=WireAcceleratorData, alias="acceleratorData")
    model_data: WireModelData = Field(default_factory=WireModelData, alias="modelData")
    service_class_data: WireServiceClassData = Field(default_factory=WireServiceClassData, alias="serviceClassData")
    server_data: WireServerData = Field(default_factory=WireServerData, alias="serverData")
    optimizer_data: WireOptimizerData = Field(default_factory=WireOptimizerData, alias="optimizerData")
    capacity_data: WireCapacityData = Field(default_factory=WireCapacityData, alias="capacityData")


class WireSystemData(_Wire):
    system: WireSystemSpec


class WireAllocationSolution(_Wire):
    """A reply of /optimize or /optimizeOne, as a remote optimizer sends it."""

    allocations: dict[str, WireAllocation] = Field(default_factory=dict)


# --- wire -> system --------------------------------------------------------------------------------------


def accelerator_from_wire(wire: WireAccelerator) -> Accelerator:
    power = wire.power
    return Accelerator(
        name=wire.name,
        type=wire.type,
        cost=wire.cost,
        multiplicity=wire.multiplicity,
        mem_size=wire.mem_size,
        mem_bw=wire.mem_bw,
        power=Power(idle=power.idle, full=power.full, mid_power=power.mid_power, mid_util=power.mid_util)
        if power is not None
        else None,
    )


def perf_from_wire(wire: WirePerf) -> PerfData:
    return PerfData(
        model=wire.name,
        accelerator=wire.acc,
        acc_count=wire.acc_count,
        alpha=wire.alpha,
        beta=wire.beta,
        max_batch_size=wire.max_batch_size,
        at_tokens=wire.at_tokens,
    )


def target_from_wire(wire: WireTarget | WireFlatTarget) -> ModelTarget:
    return ModelTarget(model=wire.model, slo_itl=wire.slo_itl, slo_ttw=wire.slo_ttw, slo_tps=wire.slo_tps)


def service_class_from_wire(wire: WireServiceClass) -> ServiceClass:
    return ServiceClass(
        name=wire.name, priority=wire.priority, targets=tuple(target_from_wire(t) for t in wire.model_targets)
    )


def allocation_from_wire(wire: WireAllocation) -> Allocation:
    load = wire.load
    return Allocation(
        accelerator=wire.accelerator,
        num_replicas=wire.num_replicas,
        max_batch=wire.max_batch,
        cost=wire.cost,
        itl_average=wire.itl_average,
        wait_average=wire.wait_average,
        load=Load(
            arrival_rate=load.arrival_rate,
            avg_length=load.avg_length,
            arrival_cov=load.arrival_cov,
            service_cov=load.service_cov,
        ),
    )


def server_from_wire(wire: WireServer) -> Server:
    desired = allocation_from_wire(wire.desired_alloc)
    return Server(
        name=wire.name,
        class_name=wire.class_name,
        model=wire.model,
        current=allocation_from_wire(wire.current_alloc),
        desired=desired if desired != Allocation() else None,
        keep_accelerator=wire.keep_accelerator,
        min_num_replicas=wire.min_num_replicas,
        max_batch_size=wire.max_batch_size,
    )


def flags_from_wire(wire: WireOptimizerFlags) -> OptimizerFlags:
    return OptimizerFlags(
        unlimited=wire.unlimited,
        heterogeneous=wire.heterogeneous,
        milp_solver=wire.milp_solver,
        use_cplex=wire.use_cplex,
        delayed_best_effort=wire.delayed_best_effort,
        saturation_policy=wire.saturation_policy,
    )


def system_from_wire(wire: WireSystemData) -> System:
    spec = wire.system
    system = System(flags=flags_from_wire(spec.optimizer_data.optimizer))
    for accelerator in spec.accelerator_data.accelerators:
        system.accelerators[accelerator.name] = accelerator_from_wire(accelerator)
    for perf in spec.model_data.models:
        system.models.setdefault(perf.name, {})[perf.acc] = perf_from_wire(perf)
    for service_class in spec.service_class_data.service_classes:
        system.service_classes[service_class.name] = service_class_from_wire(service_class)
    for server in spec.server_data.servers:
        system.servers[server.name] = server_from_wire(server)
    for count in spec.capacity_data.count:
        system.capacity[count.type] = count.count
    return system


# --- system -> wire (replies) ----------------------------------------------------------------------------


def accelerator_to_wire(accelerator: Accelerator) -> dict[str, Any]:
    power = accelerator.power
    return WireAccelerator(
        name=accelerator.name,
        type=accelerator.type,
        multiplicity=accelerator.multiplicity,
        mem_size=accelerator.mem_size,
        mem_bw=accelerator.mem_bw,
        power=WirePower(idle=power.idle, full=power.full, mid_power=power.mid_power, mid_util=power.mid_util)
        if power is not None
        else None,
        cost=accelerator.cost,
    ).dump()


def perf_to_wire(perf: PerfData) -> dict[str, Any]:
    return WirePerf(
        name=perf.model,
        acc=perf.accelerator,
        acc_count=perf.acc_count,
        alpha=perf.alpha,
        beta=perf.beta,
        max_batch_size=perf.max_batch_size,
        at_tokens=perf.at_tokens,
    ).dump()


def target_to_wire(target: ModelTarget) -> dict[str, Any]:
    return WireTarget(model=target.model, slo_itl=target.slo_itl, slo_ttw=target.slo_ttw, slo_tps=target.slo_tps).dump()


def service_class_to_wire(service_class: ServiceClass) -> dict[str, Any]:
    return {
        "name": service_class.name,
        "priority": service_class.priority,
        "modelTargets": [target_to_wire(t) for t in service_class.targets],
    }


def allocation_to_wire(allocation: Allocation) -> dict[str, Any]:
    load = allocation.load
    return WireAllocation(
        accelerator=allocation.accelerator,
        num_replicas=allocation.num_replicas,
        max_batch=allocation.max_batch,
        cost=allocation.cost,
        itl_average=allocation.itl_average,
        wait_average=allocation.wait_average,
        load=WireLoad(
            arrival_rate=load.arrival_rate,
            avg_length=load.avg_length,
            arrival_cov=load.arrival_cov,
            service_cov=load.service_cov,
        ),
    ).dump()


def server_to_wire(server: Server) -> dict[str, Any]:
    return {
        "name": server.name,
        "class": server.class_name,
        "model": server.model,
        "keepAccelerator": server.keep_accelerator,
        "minNumReplicas": server.min_num_replicas,
        "maxBatchSize": server.max_batch_size,
        "currentAlloc": allocation_to_wire(server.current),
        "desiredAlloc": allocation_to_wire(server.desired if server.desired is not None else Allocation()),
    }


def flags_to_wire(flags: OptimizerFlags) -> dict[str, Any]:
    return WireOptimizerFlags(
        unlimited=flags.unlimited,
        heterogeneous=flags.heterogeneous,
        milp_solver=flags.milp_solver,
        use_cplex=flags.use_cplex,
        delayed_best_effort=flags.delayed_best_effort,
        saturation_policy=flags.saturation_policy,
    ).dump()


def capacity_to_wire(capacity: dict[str, int]) -> dict[str, Any]:
    return {"count": [{"type": acc_type, "count": count} for acc_type, count in capacity.items()]}


def system_to_wire(system: System) -> dict[str, Any]:
    return {
        "system": {
            "acceleratorData": {"accelerators": [accelerator_to_wire(a) for a in system.accelerators.values()]},
            "modelData": {"models": [perf_to_wire(p) for perf in system.models.values() for p in perf.values()]},
            "serviceClassData": {"serviceClasses": [service_class_to_wire(c) for c in system.service_classes.values()]},
            "serverData": {"servers": [server_to_wire(s) for s in system.servers.values()]},
            "optimizerData": {"optimizer": flags_to_wire(system.flags)},
            "capacityData": capacity_to_wire(system.capacity),
        }
    }


def solution_from_wire(data: Any) -> dict[str, Allocation]:
    """Server name -> desired allocation from a remote optimizer's reply (raises pydantic.ValidationError)."""
    reply = WireAllocationSolution.model_validate(data)
    return {name: allocation_from_wire(allocation) for name, allocation in reply.allocations.items()}


def solution_to_wire(solution: Solution) -> dict[str, Any]:
    """The AllocationSolution: every placed server; an unplaced one is absent, as in the reference."""
    return {"allocations": {name: allocation_to_wire(r.allocation) for name, r in solution.allocations.items()}}
