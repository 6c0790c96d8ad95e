"""Building the optimizer's System from custom resources and from REST JSON, and back."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from optimizer import wire
from optimizer.system import (
    Allocation,
    Load,
    ModelTarget,
    OptimizerFlags,
    allocation_from_resource,
    allocation_to_resource,
    system_from_resources,
)
from shared.api import inferno as api


def resource(kind: type[Any], name: str, spec: dict[str, Any]) -> Any:
    return kind.model_validate({"metadata": {"name": name}, "spec": spec})


def test_system_from_resources() -> None:
    system = system_from_resources(
        accelerators=[
            resource(api.Accelerator, "a", {"name": "4xA100", "type": "A100", "multiplicity": 4, "cost": 160})
        ],
        models=[
            resource(
                api.Model,
                "m",
                {
                    "name": "granite",
                    "data": [
                        {"acc": "4xA100", "accCount": 1, "alpha": 1, "beta": 0, "maxBatchSize": 8, "atTokens": 512}
                    ],
                },
            )
        ],
        service_classes=[
            resource(
                api.ServiceClass, "c", {"name": "Premium", "priority": 3, "data": [{"model": "granite", "slo-ttw": 9}]}
            )
        ],
        servers=[
            resource(
                api.Server,
                "s",
                {
                    "name": "S",
                    "class": "Premium",
                    "model": "granite",
                    "currentAlloc": {
                        "accelerator": "4xA100",
                        "numReplicas": 2,
                        "load": {"arrivalRate": 6, "avgLength": 9},
                    },
                },
            )
        ],
        capacities=[
            resource(api.Capacity, "one", {"count": [{"type": "A100", "count": 8}, {"type": "G2", "count": 2}]}),
            resource(api.Capacity, "two", {"count": [{"type": "A100", "count": 4}]}),
        ],
        flags=api.OptimizerSpec(unlimited=True, heterogeneous=False, milp_solver=False, use_cplex=False),
    )
    assert system.accelerators["4xA100"].multiplicity == 4
    assert system.perf("granite", "4xA100") is not None
    assert system.service_classes["Premium"].priority == 3
    # An absent SLO is no target, written 0 for the algorithm.
    assert system.service_classes["Premium"].targets == (ModelTarget("granite", slo_itl=0, slo_ttw=9, slo_tps=0),)
    server = system.servers["S"]
    assert server.load == Load(arrival_rate=6, avg_length=9)
    assert server.current.num_replicas == 2
    assert server.desired is None
    assert system.capacity == {"A100": 4, "G2": 2}  # concatenated; the later entry for a type wins
    assert system.flags == OptimizerFlags(unlimited=True, saturation_policy="None")


def test_desired_allocation_round_trips_through_the_resource_shape() -> None:
    allocation = Allocation(
        accelerator="G2",
        num_replicas=2,
        max_batch=19,
        cost=46,
        itl_average=21.2,
        wait_average=102.1,
        load=Load(arrival_rate=60, avg_length=1024),
    )
    resource_form = allocation_to_resource(allocation)
    assert api.dump_wire(resource_form) == {
        "accelerator": "G2",
        "numReplicas": 2,
        "maxBatch": 19,
        "cost": 46,
        "itlAverage": 21.2,
        "waitAverage": 102.1,
        "load": {"arrivalRate": 60, "avgLength": 1024, "arrivalCOV": 0, "serviceCOV": 0},
    }
    assert allocation_from_resource(resource_form) == allocation
    assert allocation_from_resource(None) == Allocation()


def test_system_round_trips_through_the_rest_json() -> None:
    system = system_from_resources(
        accelerators=[resource(api.Accelerator, "g2", {"name": "G2", "type": "G2", "cost": 23, "memSize": 24})],
        models=[],
        service_classes=[resource(api.ServiceClass, "free", {"name": "Free", "data": [{"model": "m", "slo-itl": 80}]})],
        servers=[resource(api.Server, "s", {"name": "S", "class": "Free", "model": "m"})],
        capacities=[resource(api.Capacity, "c", {"count": [{"type": "G2", "count": 3}]})],
        flags=api.OptimizerSpec(
            unlimited=False, heterogeneous=True, milp_solver=True, use_cplex=False, saturation_policy="RoundRobin"
        ),
    )
    body = wire.system_to_wire(system)
    assert body["system"]["optimizerData"]["optimizer"]["saturationPolicy"] == "RoundRobin"
    again = wire.system_from_wire(wire.WireSystemData.model_validate(body))
    assert again == system


def test_a_remote_reply_becomes_desired_allocations() -> None:
    reply = {
        "allocations": {
            "Premium-granite": {
                "accelerator": "G2",
                "numReplicas": 2,
                "maxBatch": 19,
                "cost": 46,
                "itlAverage": 21.190855,
                "ttftAverage": 263.30676,  # a v0.6 optimizer's field: ignored
                "load": {"arrivalRate": 60, "avgInTokens": 128, "avgOutTokens": 1024},
            }
        }
    }
    desired = wire.solution_from_wire(reply)
    assert desired == {
        "Premium-granite": Allocation(
            accelerator="G2", num_replicas=2, max_batch=19, cost=46, itl_average=21.190855, load=Load(arrival_rate=60)
        )
    }
    assert wire.solution_from_wire({"allocations": {}}) == {}
    with pytest.raises(ValidationError, match="numReplicas"):
        wire.solution_from_wire({"allocations": {"s": {"numReplicas": -1}}})
