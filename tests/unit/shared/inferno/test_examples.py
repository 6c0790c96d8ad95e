"""The sample objects in examples/inferno/ validate against the models and optimise as documented."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from optimizer.optimize import optimize
from optimizer.system import OptimizerFlags, system_from_resources
from shared.api import inferno as api
from shared.inferno_validation import parse_inferno_object, validate_inferno_objects

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "inferno"
T = TypeVar("T")


@pytest.fixture(scope="module")
def objects() -> list[Any]:
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert files, f"no examples under {EXAMPLES}"
    return [parse_inferno_object(doc) for path in files for doc in yaml.safe_load_all(path.read_text())]


def of(objects: Sequence[Any], kind: type[T]) -> list[T]:
    return [obj for obj in objects if isinstance(obj, kind)]


def test_every_kind_has_a_sample(objects: list[Any]) -> None:
    assert sorted({obj.kind for obj in objects}) == sorted(kind for kind, _plural, _model in api.INFERNO_KINDS)
    assert all(obj.metadata.name for obj in objects)


def test_samples_are_consistent(objects: list[Any]) -> None:
    report = validate_inferno_objects(
        accelerators=of(objects, api.Accelerator),
        models=of(objects, api.Model),
        service_classes=of(objects, api.ServiceClass),
        servers=of(objects, api.Server),
        capacities=of(objects, api.Capacity),
    )
    assert report.errors == ()
    assert report.warnings == ()


def test_samples_optimise_within_capacity(objects: list[Any]) -> None:
    (optimizer,) = of(objects, api.Optimizer)
    system = system_from_resources(
        accelerators=of(objects, api.Accelerator),
        models=of(objects, api.Model),
        service_classes=of(objects, api.ServiceClass),
        servers=of(objects, api.Server),
        capacities=of(objects, api.Capacity),
        flags=optimizer.spec.data.optimizer,
    )
    assert system.capacity == {"A100": 4, "G2": 8}
    assert system.flags.saturation_policy == "PriorityExhaustive"
    limited = optimize(system)
    assert set(limited.allocations) == {"Premium-granite-13b", "Free-granite-13b"}
    for usage in limited.usage.values():
        assert usage.limit is not None
        assert usage.units <= usage.limit
    unlimited = optimize(system, OptimizerFlags(unlimited=True))
    assert unlimited.total_cost <= limited.total_cost
