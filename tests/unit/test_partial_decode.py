"""The repairs that let the rules run on an object that does not decode, and which errors they leave trusted
(shared/partial_decode.py)."""

from __future__ import annotations

from typing import Any

from shared.api.modelbooster import ModelBooster
from shared.decoding import decode_details
from shared.errors import FieldError, forbidden, invalid
from shared.partial_decode import Repair, decode_partially, trusted
from tests.unit.factories import backend, modelbooster, worker


def repaired(obj: dict[str, Any]) -> tuple[Any, dict[str, Any], list[tuple[str, bool]]]:
    model, details = decode_details(ModelBooster, obj)
    assert model is None
    partial = decode_partially(ModelBooster, obj, details)
    return partial.model, partial.obj, [(repair.path, repair.stand_in) for repair in partial.repairs]


def test_an_optional_value_is_left_out_and_a_required_one_stood_in_for() -> None:
    obj = modelbooster(backend(minReplicas="one", workers=[worker(resources={"limits": {"memory": "8GB"}})]))
    del obj["spec"]["backends"][0]["modelURI"]
    model, fixed, repairs = repaired(obj)
    assert model is not None
    assert sorted(repairs) == [
        ("spec.backends[0].minReplicas", True),
        ("spec.backends[0].modelURI", True),
        ("spec.backends[0].workers[0].resources.limits[memory]", False),
    ]
    assert fixed["spec"]["backends"][0]["minReplicas"] == 0  # the schema's minimum
    assert fixed["spec"]["backends"][0]["modelURI"] == "hf://stand-in"  # the first text its pattern admits
    assert "memory" not in fixed["spec"]["backends"][0]["workers"][0]["resources"]["limits"]
    assert obj["spec"]["backends"][0]["minReplicas"] == "one"  # the user's object is left as it is


def test_an_object_that_is_not_one_cannot_be_repaired() -> None:
    obj = modelbooster()
    obj["spec"] = "x"
    model, _, _ = repaired(obj)
    assert model is None


def test_trusted_unless_it_read_a_repair_or_a_whole_holding_a_stand_in() -> None:
    left_out = Repair("spec.backends[0].workers[0].resources.limits[memory]", stand_in=False)
    stood_in = Repair("spec.backends[1].minReplicas", stand_in=True)
    count = invalid("spec.backends[0].workers", 2, "exactly one worker")
    total = invalid("spec.backends", 0, "sum of all minReplicas must be >= 1")
    bounds = FieldError(
        path="spec.backends[1]", type="Invalid", detail="equal", reads=("spec.backends[1].minReplicas",)
    )
    feature = forbidden("spec.rateLimit", "not supported")
    assert trusted(count, [left_out])  # a field left out inside the whole it read
    assert not trusted(total, [stood_in])  # a sum over a stand-in
    assert not trusted(bounds, [stood_in])  # it read the stand-in itself
    assert trusted(feature, [left_out, stood_in])
    assert not trusted(invalid("spec.backends[0].workers[0].resources.limits[memory]", "x", "y"), [left_out])
