"""The Inferno custom resource models (shared/api/inferno.py) and single-object parsing."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from shared.api import inferno as api
from shared.inferno_validation import InfernoObjectError, parse_inferno_object
from tests.pydantic_words import says


def accelerator(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "Accelerator",
        "metadata": {"name": "a100"},
        "spec": {"name": "A100", "type": "A100", "cost": 40, **spec},
    }


def service_class(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "ServiceClass",
        "metadata": {"name": "premium"},
        "spec": {"name": "Premium", "data": [{"model": "granite", "slo-itl": 40}], **spec},
    }


def issues(obj: dict[str, Any]) -> list[str]:
    with pytest.raises(InfernoObjectError) as caught:
        parse_inferno_object(obj)
    return [str(issue) for issue in caught.value.issues]


def test_constants_and_kinds() -> None:
    assert api.API_VERSION == f"{api.GROUP}/{api.VERSION}" == "inferno.platform.ai/v1alpha1"
    assert [(kind, plural) for kind, plural, _model in api.INFERNO_KINDS] == [
        ("Accelerator", "accelerators"),
        ("Model", "models"),
        ("ServiceClass", "serviceclasses"),
        ("Server", "servers"),
        ("Capacity", "capacities"),
        ("Optimizer", "optimizers"),
    ]
    for kind, _plural, model in api.INFERNO_KINDS:
        assert model.model_fields["kind"].default == kind


def test_a_field_by_its_python_name_is_unknown_on_the_wire() -> None:
    found = issues(accelerator(mem_size=80))
    assert len(found) == 1, found
    assert "mem_size" in found[0]
    assert isinstance(parse_inferno_object(accelerator(memSize=80)), api.Accelerator)


def test_accelerator_defaults_and_wire_form() -> None:
    parsed = parse_inferno_object(accelerator(memSize=80, power={"idle": 1, "full": 3, "midPower": 2, "midUtil": 0.5}))
    assert isinstance(parsed, api.Accelerator)
    assert parsed.spec.multiplicity == 1
    wire = api.dump_wire(parsed)
    assert wire["spec"] == {
        "name": "A100",
        "type": "A100",
        "multiplicity": 1,
        "memSize": 80,
        "power": {"idle": 1, "full": 3, "midPower": 2, "midUtil": 0.5},
        "cost": 40.0,
    }
    assert wire["apiVersion"] == "inferno.platform.ai/v1alpha1"
    assert "status" not in wire


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"cost": 0}, f"Accelerator a100: spec.cost: {says('greater_than', gt=0)}"),
        ({"multiplicity": 0}, f"Accelerator a100: spec.multiplicity: {says('greater_than_equal', ge=1)}"),
        ({"type": ""}, "Accelerator a100: spec.type: String should have at least 1 character"),
        ({"colour": "red"}, "Accelerator a100: spec.colour: Extra inputs are not permitted"),
    ],
)
def test_accelerator_field_errors_name_the_object_and_field(spec: dict[str, Any], expected: str) -> None:
    assert issues(accelerator(**spec)) == [expected]


def test_priority_must_be_1_to_100_and_defaults_to_lowest() -> None:
    parsed = parse_inferno_object(service_class())
    assert isinstance(parsed, api.ServiceClass)
    assert parsed.spec.priority == 100
    assert issues(service_class(priority=0)) == [
        f"ServiceClass premium: spec.priority: {says('greater_than_equal', ge=1)}"
    ]
    assert issues(service_class(priority=101)) == [
        f"ServiceClass premium: spec.priority: {says('less_than_equal', le=100)}"
    ]


def test_slo_targets_must_be_positive_when_given() -> None:
    assert issues(service_class(data=[{"model": "granite", "slo-ttw": 0}])) == [
        f"ServiceClass premium: spec.data[0].slo-ttw: {says('greater_than', gt=0)}"
    ]
    parsed = parse_inferno_object(service_class(data=[{"model": "granite"}]))
    assert isinstance(parsed, api.ServiceClass)
    assert parsed.spec.data[0].slo_itl is None  # absent: no target


def test_duplicate_targets_in_a_class_are_rejected() -> None:
    found = issues(service_class(data=[{"model": "m", "slo-itl": 1}, {"model": "m", "slo-itl": 2}]))
    assert found == ["ServiceClass premium: spec: data[].model: duplicate value 'm'"]


def test_model_perf_rules() -> None:
    model: dict[str, Any] = {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "Model",
        "metadata": {"name": "granite"},
        "spec": {
            "name": "granite",
            "data": [{"acc": "G2", "accCount": 1, "alpha": 0, "beta": 0, "maxBatchSize": 0, "atTokens": 512}],
        },
    }
    found = issues(model)
    assert f"Model granite: spec.data[0].maxBatchSize: {says('greater_than_equal', ge=1)}" in found
    model["spec"]["data"][0]["maxBatchSize"] = 38
    assert issues(model) == [
        "Model granite: spec.data[0]: alpha and beta cannot both be 0: the decode time would be 0 ms"
    ]


def test_server_shape_matches_the_controller() -> None:
    server = {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "Server",
        "metadata": {"name": "premium-granite", "namespace": "demo", "resourceVersion": "7", "uid": "u"},
        "spec": {
            "name": "Premium-granite",
            "class": "Premium",
            "model": "granite",
            "currentAlloc": {
                "accelerator": "A100",
                "numReplicas": 4,
                "maxBatch": 16,
                "cost": 160,
                "itlAverage": 25.2,
                "waitAverage": 726.5,
                "load": {"arrivalRate": 10, "avgLength": 100, "arrivalCOV": 1, "serviceCOV": 1},
            },
            "desiredAlloc": {"accelerator": "", "numReplicas": 0, "load": {"arrivalRate": 0, "avgLength": 0}},
        },
        "status": {"active": True},
    }
    parsed = parse_inferno_object(server)
    assert isinstance(parsed, api.Server)
    assert parsed.spec.class_name == "Premium"
    assert parsed.spec.current_alloc is not None
    assert parsed.spec.current_alloc.load is not None
    assert parsed.spec.current_alloc.load.arrival_rate == 10
    assert api.dump_wire(parsed) == server  # round trip, metadata included


def test_negative_load_is_rejected() -> None:
    server = {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "Server",
        "metadata": {"name": "s"},
        "spec": {
            "name": "s",
            "class": "c",
            "model": "m",
            "currentAlloc": {"accelerator": "", "numReplicas": 0, "load": {"arrivalRate": -1, "avgLength": 10}},
        },
    }
    assert issues(server) == [f"Server s: spec.currentAlloc.load.arrivalRate: {says('greater_than_equal', ge=0)}"]


def test_optimizer_flags_and_status() -> None:
    optimizer: dict[str, Any] = {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "Optimizer",
        "metadata": {"name": "inferno"},
        "spec": {
            "optimize": True,
            "data": {
                "optimizer": {
                    "unlimited": False,
                    "heterogeneous": False,
                    "milpSolver": False,
                    "useCplex": False,
                    "saturationPolicy": "RoundRobin",
                }
            },
        },
        "status": {
            "done": True,
            "conditions": [
                {
                    "type": "Optimized",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "2 servers allocated",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ],
            "lastRunTime": "2025-01-01T00:00:00Z",
            "lastRunDurationSeconds": 0.25,
        },
    }
    parsed = parse_inferno_object(optimizer)
    assert isinstance(parsed, api.Optimizer)
    assert parsed.spec.data.optimizer.saturation_policy == "RoundRobin"
    assert api.dump_wire(parsed) == optimizer
    optimizer["spec"]["data"]["optimizer"]["saturationPolicy"] = "Fair"
    (message,) = issues(optimizer)
    assert message.startswith("Optimizer inferno: spec.data.optimizer.saturationPolicy: ")
    assert "'None'" in message


def test_missing_required_flag() -> None:
    optimizer = {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "Optimizer",
        "metadata": {"name": "inferno"},
        "spec": {"optimize": True, "data": {"optimizer": {"unlimited": True}}},
    }
    assert issues(optimizer) == [
        f"Optimizer inferno: spec.data.optimizer.heterogeneous: {says('missing')}",
        f"Optimizer inferno: spec.data.optimizer.milpSolver: {says('missing')}",
        f"Optimizer inferno: spec.data.optimizer.useCplex: {says('missing')}",
    ]


def test_unknown_kind_and_wrong_api_version() -> None:
    assert issues({"kind": "Widget", "metadata": {"name": "w"}}) == [
        "Widget w: kind: not an Inferno kind; known: Accelerator, Capacity, Model, Optimizer, Server, ServiceClass"
    ]
    wrong = accelerator()
    wrong["apiVersion"] = "inferno.platform.ai/v1beta1"
    expected = says("literal_error", expected="'inferno.platform.ai/v1alpha1'")
    assert issues(wrong) == [f"Accelerator a100: apiVersion: {expected}"]


def test_capacity_duplicate_types_in_one_object() -> None:
    with pytest.raises(ValidationError, match=r"count\[\]\.type: duplicate value 'G2'"):
        api.CapacitySpec.model_validate({"count": [{"type": "G2", "count": 1}, {"type": "G2", "count": 2}]})
    assert api.CapacitySpec.model_validate({"count": [{"type": "G2"}]}).count[0].count == 0
