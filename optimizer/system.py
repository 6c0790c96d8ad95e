"""The system the optimizer works on: accelerators, model performance, classes, servers, capacity, flags.

One in-memory form, filled either from the optimizer's REST JSON (`optimizer.wire`) or from the
custom resources of one namespace (`system_from_resources`). The algorithm reads nothing else. Values are
already validated when they get here; units are the wire's (rates in requests/min, times in ms, costs in
cents/h).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from shared.api import inferno as api

FREE_CLASS = "Free"  # the class a server with an empty class name belongs to (reference behaviour)


@dataclass(frozen=True, slots=True)
class Power:
    idle: int
    full: int
    mid_power: int
    mid_util: float


@dataclass(frozen=True, slots=True)
class Accelerator:
    name: str
    type: str
    cost: float
    multiplicity: int = 1
    mem_size: int = 0
    mem_bw: int = 0
    power: Power | None = None


@dataclass(frozen=True, slots=True)
class PerfData:
    """Decode performance of `model` on accelerator `accelerator`."""

    model: str
    accelerator: str
    acc_count: int
    alpha: float
    beta: float
    max_batch_size: int
    at_tokens: int


@dataclass(frozen=True, slots=True)
class ModelTarget:
    """SLO targets of one model in one class; 0 means no target."""

    model: str
    slo_itl: float = 0.0
    slo_ttw: float = 0.0
    slo_tps: float = 0.0


@dataclass(frozen=True, slots=True)
class ServiceClass:
    name: str
    priority: int = api.DEFAULT_PRIORITY
    targets: tuple[ModelTarget, ...] = ()

    def target_for(self, model: str) -> ModelTarget | None:
        for target in self.targets:
            if target.model == model:
                return target
        return None


@dataclass(frozen=True, slots=True)
class Load:
    arrival_rate: float = 0.0  # requests/min
    avg_length: int = 0  # tokens per request
    arrival_cov: float = 0.0
    service_cov: float = 0.0


@dataclass(frozen=True, slots=True)
class Allocation:
    """AllocationData of the legacy wire format; accelerator "" means no allocation."""

    accelerator: str = ""
    num_replicas: int = 0
    max_batch: int = 0
    cost: float = 0.0
    itl_average: float = 0.0
    wait_average: float = 0.0
    load: Load = field(default_factory=Load)


@dataclass(frozen=True, slots=True)
class Server:
    name: str
    class_name: str
    model: str
    current: Allocation = field(default_factory=Allocation)
    desired: Allocation | None = None
    # Optimizer-only fields (absent from the CRD, so always off through the controller).
    keep_accelerator: bool = False
    min_num_replicas: int = 0
    max_batch_size: int = 0

    @property
    def load(self) -> Load:
        """The traffic the optimizer sizes for: the observed load of the current allocation."""
        return self.current.load


@dataclass(frozen=True, slots=True)
class OptimizerFlags:
    unlimited: bool = False
    heterogeneous: bool = False
    milp_solver: bool = False
    use_cplex: bool = False
    delayed_best_effort: bool = False
    saturation_policy: api.SaturationPolicy = "None"


@dataclass(slots=True)
class System:
    """Everything one optimisation needs. Mutable containers of immutable items, so a snapshot is cheap."""

    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    # model name -> accelerator name -> perf; a model may exist with no perf data yet (REST addModel).
    models: dict[str, dict[str, PerfData]] = field(default_factory=dict)
    service_classes: dict[str, ServiceClass] = field(default_factory=dict)
    servers: dict[str, Server] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)  # accelerator type -> free physical units
    flags: OptimizerFlags = field(default_factory=OptimizerFlags)

    def snapshot(self) -> System:
        return System(
            accelerators=dict(self.accelerators),
            models={name: dict(perf) for name, perf in self.models.items()},
            service_classes=dict(self.service_classes),
            servers=dict(self.servers),
            capacity=dict(self.capacity),
            flags=self.flags,
        )

    def perf(self, model: str, accelerator: str) -> PerfData | None:
        return self.models.get(model, {}).get(accelerator)

    def class_of(self, server: Server) -> ServiceClass | None:
        return self.service_classes.get(server.class_name or FREE_CLASS)


# --- from the custom resources ---------------------------------------------------------------------------


def system_from_resources(
    *,
    accelerators: Iterable[api.Accelerator],
    models: Iterable[api.Model],
    service_classes: Iterable[api.ServiceClass],
    servers: Iterable[api.Server],
    capacities: Iterable[api.Capacity],
    flags: api.OptimizerSpec | None = None,
) -> System:
    """One namespace's objects as a System (what the reference controller posted to /optimizeOne).

    Capacity objects are concatenated in the order given; a later entry for a type overwrites an earlier one.
    """
    system = System(flags=flags_from_resource(flags) if flags is not None else OptimizerFlags())
    for accelerator in accelerators:
        system.accelerators[accelerator.spec.name] = accelerator_from_resource(accelerator.spec)
    for model in models:
        system.models[model.spec.name] = {
            entry.acc: PerfData(
                model=model.spec.name,
                accelerator=entry.acc,
                acc_count=entry.acc_count,
                alpha=entry.alpha,
                beta=entry.beta,
                max_batch_size=entry.max_batch_size,
                at_tokens=entry.at_tokens,
            )
            for entry in model.spec.data
        }
    for service_class in service_classes:
        spec = service_class.spec
        system.service_classes[spec.name] = ServiceClass(
            name=spec.name,
            priority=spec.priority,
            targets=tuple(
                ModelTarget(
                    model=slo.model,
                    slo_itl=slo.slo_itl or 0.0,
                    slo_ttw=slo.slo_ttw or 0.0,
                    slo_tps=slo.slo_tps or 0.0,
                )
                for slo in spec.data
            ),
        )
    for server in servers:
        server_spec = server.spec
        system.servers[server_spec.name] = Server(
            name=server_spec.name,
            class_name=server_spec.class_name,
            model=server_spec.model,
            current=allocation_from_resource(server_spec.current_alloc),
            desired=allocation_from_resource(server_spec.desired_alloc)
            if server_spec.desired_alloc is not None
            else None,
        )
    for capacity in capacities:
        for entry in capacity.spec.count:
            system.capacity[entry.type] = entry.count
    return system


def accelerator_from_resource(spec: api.AcceleratorSpec) -> Accelerator:
    power = spec.power
    return Accelerator(
        name=spec.name,
        type=spec.type,
        cost=spec.cost,
        multiplicity=spec.multiplicity,
        mem_size=spec.mem_size or 0,
        mem_bw=spec.mem_bw or 0,
        power=Power(idle=power.idle, full=power.full, mid_power=power.mid_power, mid_util=power.mid_util)
        if power is not None
        else None,
    )


def allocation_from_resource(data: api.AllocationData | None) -> Allocation:
    if data is None:
        return Allocation()
    load = data.load
    return Allocation(
        accelerator=data.accelerator,
        num_replicas=data.num_replicas,
        max_batch=data.max_batch or 0,
        cost=data.cost or 0.0,
        itl_average=data.itl_average or 0.0,
        wait_average=data.wait_average or 0.0,
        load=Load(
            arrival_rate=load.arrival_rate,
            avg_length=load.avg_length,
            arrival_cov=load.arrival_cov or 0.0,
            service_cov=load.service_cov or 0.0,
        )
        if load is not None
        else Load(),
    )


def allocation_to_resource(allocation: Allocation) -> api.AllocationData:
    """An allocation as the Server CR's `desiredAlloc`."""
    load = allocation.load
    return api.AllocationData(
        accelerator=allocation.accelerator,
        num_replicas=allocation.num_replicas,
        max_batch=allocation.max_batch,
        cost=allocation.cost,
        itl_average=allocation.itl_average,
        wait_average=allocation.wait_average,
        load=api.ServerLoad(
            arrival_rate=load.arrival_rate,
            avg_length=load.avg_length,
            arrival_cov=load.arrival_cov,
            service_cov=load.service_cov,
        ),
    )


def flags_from_resource(spec: api.OptimizerSpec) -> OptimizerFlags:
    return OptimizerFlags(
        unlimited=spec.unlimited,
        heterogeneous=spec.heterogeneous,
        milp_solver=spec.milp_solver,
        use_cplex=spec.use_cplex,
        delayed_best_effort=bool(spec.delayed_best_effort),
        saturation_policy=spec.saturation_policy or "None",
    )
