"""Values as decoding takes them: JSON has one number type, so an integral float is an integer; a fraction, a
boolean or a string is refused with the field's own error, once; a config keeps any JSON value; a null backend
shape is no shape. These inputs are decided in native code or in a Python fallback; either way the result is
the one pinned here."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from shared.api.modelbooster import ModelBooster
from shared.backend_shape import NEITHER_DETAIL
from shared.decoding import decode
from shared.engine_config import ConfigError, config_object
from shared.json_values import JsonInteger
from tests.unit.factories import backend, modelbooster, policy, single_backend, single_modelbooster, worker

Obj = dict[str, Any]
Read = Callable[[ModelBooster], object]


def _status(**fields: Any) -> Obj:
    obj = modelbooster()
    obj["status"] = fields
    return obj


# (wire path, object holding `value` there, how the decoded model reads it, smallest accepted value)
INTEGER_FIELDS: list[tuple[str, Callable[[object], Obj], Read, int | None]] = [
    ("spec.backends[0].minReplicas", lambda v: modelbooster(backend(minReplicas=v, maxReplicas=9)),
     lambda m: m.spec.backends[0].min_replicas, 0),
    ("spec.backends[0].maxReplicas", lambda v: modelbooster(backend(maxReplicas=v)),
     lambda m: m.spec.backends[0].max_replicas, 1),
    ("spec.backends[0].scalingCost", lambda v: modelbooster(backend(scalingCost=v)),
     lambda m: m.spec.backends[0].scaling_cost, 0),
    ("spec.backends[0].routeWeight", lambda v: modelbooster(backend(routeWeight=v)),
     lambda m: m.spec.backends[0].route_weight, 0),
    ("spec.backends[0].workers[0].replicas", lambda v: modelbooster(backend(workers=[worker(replicas=v)])),
     lambda m: m.spec.backends[0].workers[0].replicas, 0),
    ("spec.backends[0].workers[0].pods", lambda v: modelbooster(backend(workers=[worker(pods=v)])),
     lambda m: m.spec.backends[0].workers[0].pods, 0),
    ("spec.backends[0].autoscalingPolicy.tolerancePercent",
     lambda v: modelbooster(backend(autoscalingPolicy=policy(tolerancePercent=v))),
     lambda m: m.spec.backends[0].autoscaling_policy and m.spec.backends[0].autoscaling_policy.tolerance_percent, 0),
    ("spec.costExpansionRatePercent", lambda v: modelbooster(costExpansionRatePercent=v),
     lambda m: m.spec.cost_expansion_rate_percent, 0),
    ("spec.backend.replicas", lambda v: single_modelbooster(single_backend(replicas=v)),
     lambda m: m.spec.backend and m.spec.backend.replicas, 0),
    ("status.observedGeneration", lambda v: _status(observedGeneration=v),
     lambda m: m.status and m.status.observed_generation, None),
    ("status.backendCount", lambda v: _status(backendCount=v), lambda m: m.status and m.status.backend_count, 0),
    ("status.backendStatuses[0].replicas", lambda v: _status(backendStatuses=[{"name": "a", "replicas": v}]),
     lambda m: m.status and m.status.backend_statuses and m.status.backend_statuses[0].replicas, None),
]  # fmt: skip
INTEGER_IDS = [path for path, *_ in INTEGER_FIELDS]


def _errors(obj: Obj) -> list[str]:
    decoded, errors = decode(ModelBooster, obj)
    assert (decoded is None) == bool(errors)
    return [error.render() for error in errors]


@pytest.mark.parametrize(("path", "build", "read", "least"), INTEGER_FIELDS, ids=INTEGER_IDS)
@pytest.mark.parametrize("value", [3.0, 3, 1e1])
def test_an_integral_number_decodes_as_an_int(
    path: str, build: Callable[[object], Obj], read: Read, least: int | None, value: float
) -> None:
    decoded, errors = decode(ModelBooster, build(value))
    assert errors == []
    assert decoded is not None
    number = read(decoded)
    assert type(number) is int
    assert number == int(value)


@pytest.mark.parametrize(("path", "build", "read", "least"), INTEGER_FIELDS, ids=INTEGER_IDS)
@pytest.mark.parametrize("value", [3.5, -0.5, True, False, "3", [3], {"n": 3}])
def test_anything_else_is_not_an_integer(
    path: str, build: Callable[[object], Obj], read: Read, least: int | None, value: object
) -> None:
    shown = json.dumps(value, separators=(",", ":"))
    assert _errors(build(value)) == [f"{path}: Invalid value: {shown}: must be of type integer"]


@pytest.mark.parametrize(("path", "build", "read", "least"), INTEGER_FIELDS, ids=INTEGER_IDS)
def test_a_bound_is_checked_on_the_integer_a_float_stands_for(
    path: str, build: Callable[[object], Obj], read: Read, least: int | None
) -> None:
    if least is None:
        return
    for below in (least - 1, float(least - 1)):
        assert _errors(build(below)) == [
            f"{path}: Invalid value: {least - 1}: must be greater than or equal to {least}"
        ]


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda v: modelbooster(backend(routeWeight=v)), "spec.backends[0].routeWeight: Invalid value: 101: "),
        (
            lambda v: modelbooster(backend(autoscalingPolicy=policy(tolerancePercent=v))),
            "spec.backends[0].autoscalingPolicy.tolerancePercent: Invalid value: 101: ",
        ),
    ],
)
@pytest.mark.parametrize("value", [101, 101.0])
def test_an_upper_bound_too(build: Callable[[object], Obj], expected: str, value: float) -> None:
    assert _errors(build(value)) == [expected + "must be less than or equal to 100"]


def test_a_huge_integral_float_is_the_integer_it_stands_for() -> None:
    # Far past int64 (where a float-to-int conversion bounded by int64 would refuse the type): the bound decides.
    [line] = _errors(modelbooster(costExpansionRatePercent=1e300))
    assert line.startswith("spec.costExpansionRatePercent: Invalid value: ")
    assert line.endswith(": must be less than or equal to 1000")
    decoded, _ = decode(ModelBooster, modelbooster(backend(scalingCost=1e300)))
    assert decoded is not None
    assert decoded.spec.backends[0].scaling_cost == int(1e300)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_number_is_not_an_integer(value: float) -> None:
    adapter: TypeAdapter[int] = TypeAdapter(Annotated[int, JsonInteger()])
    with pytest.raises(ValidationError) as refused:
        adapter.validate_python(value)
    [detail] = refused.value.errors(include_url=False)
    assert detail["type"] == "int_type"


def test_bounds_before_and_in_json_integer_both_hold() -> None:
    adapter: TypeAdapter[int] = TypeAdapter(Annotated[int, Field(ge=0, le=10), JsonInteger(ge=2, le=20)])
    assert adapter.validate_python(2.0) == 2
    assert adapter.validate_python(10) == 10
    for outside, kind in ((1, "greater_than_equal"), (11, "less_than_equal"), (1.0, "greater_than_equal")):
        with pytest.raises(ValidationError) as refused:
            adapter.validate_python(outside)
        [detail] = refused.value.errors(include_url=False)
        assert detail["type"] == kind


def test_json_integer_applies_to_integers_only() -> None:
    with pytest.raises(TypeError, match="int schema"):
        TypeAdapter(Annotated[str, JsonInteger()])


# ---------------------------------------------------------------------------------------------------------
# Quantities

TYPE_MESSAGE = "quantities must be an integer or a string such as '500m' or '2Gi'"
# Not the 120-character pattern: what a quantity looks like, with examples that fit the field.
PATTERN_MESSAGE = "not a quantity: write a number with an optional suffix, such as 500m, 2Gi or 8G"
TARGET_MESSAGE = "not a quantity: write a number with an optional suffix, such as 10, 0.5 or 500m"
LIMIT_PATH = "spec.backends[0].workers[0].resources.limits[cpu]"


def _with_limit(value: object) -> Obj:
    return modelbooster(backend(workers=[worker(resources={"limits": {"cpu": value}})]))


@pytest.mark.parametrize(("value", "decoded"), [("1Gi", "1Gi"), ("500m", "500m"), (2, 2), (2.0, 2), (-3.0, -3)])
def test_a_quantity_decodes(value: object, decoded: int | str) -> None:
    model, errors = decode(ModelBooster, _with_limit(value))
    assert errors == []
    assert model is not None
    resources = model.spec.backends[0].workers[0].resources
    assert resources is not None
    assert resources.limits is not None
    assert resources.limits["cpu"] == decoded
    assert type(resources.limits["cpu"]) is type(decoded)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, TYPE_MESSAGE),
        (False, TYPE_MESSAGE),
        (1.5, TYPE_MESSAGE),
        (float("inf"), TYPE_MESSAGE),
        (None, TYPE_MESSAGE),
        ([1], TYPE_MESSAGE),
        ({"a": 1}, TYPE_MESSAGE),
        ("bad", PATTERN_MESSAGE),
        ("1Gi ", 'did you mean "1Gi"?'),
        ("", PATTERN_MESSAGE),
    ],
)
def test_a_quantity_is_refused_once_with_its_reason(value: object, message: str) -> None:
    [line] = _errors(_with_limit(value))
    assert line.startswith(f"{LIMIT_PATH}: Invalid value: ")
    assert line.endswith(f": {message}")


def test_a_target_value_is_a_quantity_too() -> None:
    obj = modelbooster(backend(autoscalingPolicy={"metrics": [{"metricName": "m", "targetValue": "ten"}]}))
    assert _errors(obj) == [
        f'spec.backends[0].autoscalingPolicy.metrics[0].targetValue: Invalid value: "ten": {TARGET_MESSAGE}'
    ]
    obj["spec"]["backends"][0]["autoscalingPolicy"]["metrics"][0]["targetValue"] = 0.5
    assert _errors(obj) == [
        "spec.backends[0].autoscalingPolicy.metrics[0].targetValue: Invalid value: 0.5: quantities must be an integer "
        "or a string such as '10', '0.5' or '500m'"
    ]


# ---------------------------------------------------------------------------------------------------------
# A worker's config: any JSON value decodes as it is, so that validation can name a non-object precisely


@pytest.mark.parametrize(
    ("config", "kind"),
    [("x", "string"), (3, "number"), (2.5, "number"), (True, "bool"), ([1, "a", None], "array")],
)
def test_a_config_of_every_json_kind_reaches_validation(config: object, kind: str) -> None:
    decoded, errors = decode(ModelBooster, modelbooster(backend(workers=[worker(config=config)])))
    assert errors == []
    assert decoded is not None
    kept = decoded.spec.backends[0].workers[0].config
    assert kept == config
    assert type(kept) is type(config)
    with pytest.raises(ConfigError, match=f"cannot unmarshal {kind} into Go value"):
        config_object(kept)


@pytest.mark.parametrize("config", [None, {}, {"a": {"b": [1, 2.5, True, None, "x", {"c": []}]}, "n": 7}])
def test_an_object_config_or_none_is_kept_as_written(config: object) -> None:
    decoded, errors = decode(ModelBooster, modelbooster(backend(workers=[worker(config=config)])))
    assert errors == []
    assert decoded is not None
    kept = decoded.spec.backends[0].workers[0].config
    assert json.dumps(kept) == json.dumps(config)  # also tells 1 from 1.0 and True from 1
    assert config_object(kept) == config


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


CONFIG_PATH = "spec.backends[0].workers[0].config"


@pytest.mark.parametrize(
    ("config", "path", "detail", "value"),
    [
        # Only a Python caller can pass a value JSON cannot hold (the YAML and JSON readers give JSON values).
        # Paths as before native decoding, union tags and all: refusals are explained by pydantic's JsonValue.
        ({"a": {"b": ...}}, f"{CONFIG_PATH}.dict", "input was not a valid JSON value", ...),
        ([1, {"x": ...}], f"{CONFIG_PATH}.list", "input was not a valid JSON value", ...),
        (..., CONFIG_PATH, "input was not a valid JSON value", ...),
        # Deeper than pydantic-core validates: the webhook's and the YAML reader's depth bounds come first.
        (_nested(300), f"{CONFIG_PATH}.dict", "Recursion error - maximum validation depth exceeded", None),
    ],
)
def test_a_config_json_cannot_hold_is_refused_where_and_why(
    config: object, path: str, detail: str, value: object
) -> None:
    decoded, errors = decode(ModelBooster, modelbooster(backend(workers=[worker(config=config)])))
    assert decoded is None
    assert [(error.path, error.detail) for error in errors] == [(path, detail)]
    if value is not None:
        assert errors[0].value is value


def test_a_config_is_copied_not_shared_with_the_input() -> None:
    config: dict[str, Any] = {"a": [1], "b": {"c": 2}}
    obj = modelbooster(backend(workers=[worker(config=config)]))
    decoded, _ = decode(ModelBooster, obj)
    assert decoded is not None
    config["a"].append(2)
    config["b"]["c"] = 3
    assert decoded.spec.backends[0].workers[0].config == {"a": [1], "b": {"c": 2}}


# ---------------------------------------------------------------------------------------------------------
# A null backend shape names no shape


def test_a_null_list_beside_a_single_backend_is_no_list() -> None:
    obj = single_modelbooster(single_backend(replicas=2))
    obj["spec"]["backends"] = None
    decoded, errors = decode(ModelBooster, obj)
    assert errors == []
    assert decoded is not None
    assert decoded.spec.backend is not None
    assert [(b.name, b.min_replicas, b.max_replicas) for b in decoded.spec.backends] == [("a", 2, 2)]
    assert "backends" not in decoded.to_wire()["spec"]


def test_a_null_single_backend_beside_a_list_is_no_single_backend() -> None:
    obj = modelbooster(backend("x"))
    obj["spec"]["backend"] = None
    decoded, errors = decode(ModelBooster, obj)
    assert errors == []
    assert decoded is not None
    assert decoded.spec.backend is None
    assert [b.name for b in decoded.spec.backends] == ["x"]


@pytest.mark.parametrize("spec", [{"backend": None, "backends": None}, {"backends": None}, {"backend": None}, {}])
def test_null_shapes_alone_are_no_shape(spec: Obj) -> None:
    obj = modelbooster()
    obj["spec"] = spec
    assert _errors(obj) == [f"spec: Invalid value: {json.dumps(spec, sort_keys=True, separators=(',', ':'))}: "
                            f"{NEITHER_DETAIL}"]  # fmt: skip


def test_an_empty_list_is_still_too_short() -> None:
    assert _errors(modelbooster(backends=[])) == ["spec.backends: Invalid value: 0: should have at least 1 items"]


# ---------------------------------------------------------------------------------------------------------
# Valid input is decided in native code: a Python validator (pydantic checks a `Field` bound of an optional
# JsonInteger field in Python, say) would come back unnoticed, since the results would be the same.


def _rich_modelbooster() -> Obj:
    tolerations = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}]
            }
        }
    }
    resources = {"limits": {"cpu": "8", "nvidia.com/gpu": 1}, "requests": {"memory": "16Gi"}}
    config = {"max-model-len": 32768, "gpu-memory-utilization": 0.9, "enforce-eager": True, "args": ["-x", None]}
    workers = [
        worker(replicas=1, pods=2, resources=resources, config=config, affinity=affinity, tolerations=tolerations)
    ]
    env = [{"name": "A", "value": "1"}, {"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    first = backend(
        "a", workers=workers, env=env, scalingCost=10, routeWeight=50, autoscalingPolicy=policy(tolerancePercent=5)
    )
    first["scaleToZeroGracePeriod"] = "45s"
    obj = modelbooster(first, backend("b", minReplicas=0, maxReplicas=3), costExpansionRatePercent=200)
    obj["spec"]["modelMatch"] = {"headers": {"x-model": {"exact": "m"}}, "body": {"model": "m"}}
    obj["metadata"].update(labels={"a": "b"}, generation=3, managedFields=[{"manager": "kubectl"}])
    obj["status"] = {"observedGeneration": 3, "backendCount": 2, "backendStatuses": [{"name": "a", "replicas": 1}]}
    return obj


def test_a_valid_modelbooster_decodes_without_python_validators() -> None:
    obj = _rich_modelbooster()
    decode(ModelBooster, obj)  # once before, so that the parsed duration is cached
    called: list[str] = []

    def record(frame: Any, event: str, _arg: object) -> None:
        # Durations are checked in Python: their refusals carry Go's wording, which native code cannot give.
        if event == "call" and not frame.f_code.co_filename.endswith(os.path.join("shared", "durations.py")):
            called.append(frame.f_code.co_name)

    previous = sys.getprofile()
    sys.setprofile(record)
    try:
        decoded, errors = decode(ModelBooster, obj)
    finally:
        sys.setprofile(previous)
    assert errors == []
    assert decoded is not None
    # `decode` itself (and its one helper), and the spec's one model validator (which puts a single backend in the
    # list).
    assert [name for name in called if name not in ("decode", "decode_details", "_one_list_of_backends")] == []
    assert called.count("_one_list_of_backends") == 1
