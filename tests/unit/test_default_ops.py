"""The ops defaulting records (`Defaulted.ops`, the mutating webhook's patch): they turn the object as given
into the defaulted object, in an order that never depends on the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.defaults import apply_defaults
from tests.unit.factories import backend, modelbooster, policy, worker


def _as_text(value: Any) -> str:
    # JSON text, keys sorted: Python's == would let 1 stand for True or 1.0.
    return json.dumps(value, sort_keys=True)


def _round_trips(obj: dict[str, Any]) -> list[dict[str, Any]]:
    defaulted = apply_defaults(obj)
    assert _as_text(jsonpatch.apply_patch(obj, defaulted.ops)) == _as_text(defaulted.obj)
    return defaulted.ops


def test_one_op_per_default_set_in_walk_order() -> None:
    obj = modelbooster(backend("a", workers=[worker(type=None, pods=0)]), autoscalingPolicy=policy())
    ops = _round_trips(obj)
    assert [(op["op"], op["path"]) for op in ops] == [
        ("add", "/spec/autoscalingPolicy/tolerancePercent"),
        ("add", "/spec/costExpansionRatePercent"),
        ("add", "/spec/backends/0/routeWeight"),
        ("add", "/spec/backends/0/scaleToZeroGracePeriod"),
        ("replace", "/spec/backends/0/workers/0/type"),  # an explicit null
        ("add", "/spec/backends/0/workers/0/replicas"),
        ("replace", "/spec/backends/0/workers/0/pods"),  # 0 is no pod count
    ]


def test_a_defaulted_object_records_no_ops() -> None:
    defaulted = apply_defaults(modelbooster(backend("a"), backend("b")))
    assert apply_defaults(defaulted.obj).ops == []


def test_a_single_backend_is_defaulted_in_place() -> None:
    obj = modelbooster()
    obj["spec"]["backend"] = obj["spec"].pop("backends")[0]
    ops = _round_trips(obj)
    assert {op["path"].rsplit("/", 1)[0] for op in ops} == {"/spec/backend", "/spec/backend/workers/0"}


_SCRIPT = (
    "import json, sys; from shared.defaults import apply_defaults; "
    "print(json.dumps(apply_defaults(json.loads(sys.argv[1])).ops))"
)


def test_same_ops_whatever_the_hash_seed() -> None:
    obj = json.dumps(modelbooster(backend("a"), backend("b", workers=[worker(), worker(type="decode")])))
    runs = [
        subprocess.run(
            [sys.executable, "-c", _SCRIPT, obj],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    ]
    assert runs[0] == runs[1] == runs[2]
    assert json.loads(runs[0])


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.floats(-1, 1) | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)
# Every key defaulting reads, with any value (null, 0, 0.0, false, objects where numbers belong...).
_defaulted_keys = ("type", "replicas", "pods", "routeWeight", "scaleToZeroGracePeriod", "tolerancePercent")
_maybe = st.one_of(_json, st.sampled_from([0, 0.0, None, 1, False]))
_workers = st.lists(
    st.dictionaries(st.sampled_from(_defaulted_keys), _maybe, max_size=4) | _json, max_size=3
) | _json
_policies = st.dictionaries(st.sampled_from(["tolerancePercent", "metrics"]), _maybe, max_size=2) | _json
_backends = st.lists(
    st.fixed_dictionaries(
        {"workers": _workers},
        optional={key: _maybe for key in _defaulted_keys} | {"autoscalingPolicy": _policies},
    )
    | _json,
    max_size=3,
)
_specs = st.fixed_dictionaries(
    {},
    optional={
        "backends": _backends | _json,
        "backend": st.fixed_dictionaries({"workers": _workers}, optional={"schedulerName": _maybe}) | _json,
        "autoscalingPolicy": _policies,
        "costExpansionRatePercent": _maybe,
    },
)


@settings(max_examples=300, deadline=None)
@given(spec=_specs | _json)
def test_the_ops_turn_any_object_into_its_defaulted_form(spec: Any) -> None:
    _round_trips({"apiVersion": "v", "kind": "ModelBooster", "spec": spec})


@pytest.mark.parametrize("obj", [{}, {"spec": None}, {"spec": []}, {"spec": {"backends": None}}])
def test_nothing_to_default_records_nothing(obj: dict[str, Any]) -> None:
    assert apply_defaults(obj).ops == []
