"""Defaulting (docs/design/api.md §6): every default, what is left alone, idempotence, malformed input."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.defaults import apply_defaults
from tests.unit.factories import backend, modelbooster, policy, worker


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = apply_defaults(obj).obj["spec"]
    return spec


def test_route_weight_defaults_to_100_and_keeps_explicit_values() -> None:
    spec = spec_of(modelbooster(backend("a"), backend("b", routeWeight=0)))
    assert [entry["routeWeight"] for entry in spec["backends"]] == [100, 0]


def test_worker_type_defaults_to_server() -> None:
    spec = spec_of(modelbooster(backend(workers=[{"image": "x"}])))
    assert spec["backends"][0]["workers"][0]["type"] == "server"


def test_worker_replicas_and_pods_default_to_one_when_absent() -> None:
    spec = spec_of(modelbooster(backend(workers=[{"type": "server"}])))
    assert spec["backends"][0]["workers"][0] == {"type": "server", "replicas": 1, "pods": 1}


def test_explicit_zero_replicas_is_kept() -> None:
    spec = spec_of(modelbooster(backend(workers=[worker(replicas=0)])))
    assert spec["backends"][0]["workers"][0]["replicas"] == 0


def test_zero_pods_becomes_one_with_a_warning() -> None:
    result = apply_defaults(modelbooster(backend(workers=[worker(pods=0)])))
    assert result.obj["spec"]["backends"][0]["workers"][0]["pods"] == 1
    assert result.warnings == [
        "spec.backends[0].workers[0].pods: 0 is not a valid pod count (every replica has at least its entry pod); "
        "set to 1"
    ]


def test_explicit_pods_are_kept_without_warning() -> None:
    result = apply_defaults(modelbooster(backend(workers=[worker(pods=4)])))
    assert result.obj["spec"]["backends"][0]["workers"][0]["pods"] == 4
    assert result.warnings == []


def test_model_level_autoscaling_defaults_grace_period_and_expansion_rate() -> None:
    spec = spec_of(modelbooster(backend("a"), backend("b", scaleToZeroGracePeriod="2m"), autoscalingPolicy=policy()))
    assert [entry["scaleToZeroGracePeriod"] for entry in spec["backends"]] == ["30s", "2m"]
    assert spec["costExpansionRatePercent"] == 200


def test_model_level_keeps_an_explicit_expansion_rate_even_zero() -> None:
    spec = spec_of(modelbooster(autoscalingPolicy=policy(), costExpansionRatePercent=0))
    assert spec["costExpansionRatePercent"] == 0


def test_without_model_level_autoscaling_nothing_autoscaling_related_is_added() -> None:
    spec = spec_of(modelbooster(backend(autoscalingPolicy=policy())))
    assert "costExpansionRatePercent" not in spec
    assert "scaleToZeroGracePeriod" not in spec["backends"][0]


def test_tolerance_percent_defaults_to_10_at_both_levels() -> None:
    spec = spec_of(modelbooster(backend(autoscalingPolicy=policy()), autoscalingPolicy=policy(tolerancePercent=0)))
    assert spec["autoscalingPolicy"]["tolerancePercent"] == 0
    assert spec["backends"][0]["autoscalingPolicy"]["tolerancePercent"] == 10


def test_null_counts_as_absent() -> None:
    spec = spec_of(modelbooster(backend(routeWeight=None, workers=[worker(type=None, replicas=None)])))
    assert spec["backends"][0]["routeWeight"] == 100
    assert spec["backends"][0]["workers"][0]["type"] == "server"
    assert spec["backends"][0]["workers"][0]["replicas"] == 1


def test_the_whole_defaulted_object_for_a_model_level_example() -> None:
    obj = modelbooster(backend("a", maxReplicas=3, scalingCost=1), autoscalingPolicy=policy(), name="m")
    assert apply_defaults(obj).obj == {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "m", "namespace": "default"},
        "spec": {
            "backends": [
                {
                    "name": "a",
                    "type": "vLLM",
                    "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "scalingCost": 1,
                    "routeWeight": 100,
                    "scaleToZeroGracePeriod": "30s",
                    "workers": [
                        {"type": "server", "image": "vllm/vllm-openai:v0.10.1", "replicas": 1, "pods": 1},
                    ],
                }
            ],
            "autoscalingPolicy": {
                "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}],
                "tolerancePercent": 10,
            },
            "costExpansionRatePercent": 200,
        },
    }


def test_unknown_fields_are_preserved_and_the_input_is_not_mutated() -> None:
    obj = modelbooster(backend(futureField={"x": [1, 2]}), futureSpecField=True)
    obj["status"] = {"conditions": []}
    before = copy.deepcopy(obj)
    result = apply_defaults(obj)
    assert obj == before
    assert result.obj["spec"]["futureSpecField"] is True
    assert result.obj["spec"]["backends"][0]["futureField"] == {"x": [1, 2]}
    assert result.obj["status"] == {"conditions": []}
    result.obj["spec"]["backends"][0]["futureField"]["x"].append(3)
    assert obj["spec"]["backends"][0]["futureField"] == {"x": [1, 2]}


def test_malformed_input_is_left_for_validation() -> None:
    for spec in ("text", None, 3, ["a"]):
        assert apply_defaults({"spec": spec}).obj == {"spec": spec}
    assert apply_defaults({"spec": {"backends": "x"}}).obj == {"spec": {"backends": "x"}}
    assert apply_defaults({"spec": {"backends": [1, {"workers": [7]}, {"workers": {}}]}}).obj == {
        "spec": {"backends": [1, {"workers": [7], "routeWeight": 100}, {"workers": {}, "routeWeight": 100}]}
    }
    assert apply_defaults({}).obj == {}


def test_non_numeric_pods_are_left_for_validation() -> None:
    result = apply_defaults(modelbooster(backend(workers=[worker(pods="zero")])))
    assert result.obj["spec"]["backends"][0]["workers"][0]["pods"] == "zero"
    assert result.warnings == []


json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "30s", "server", "x"])
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "type"]), children),
    max_leaves=8,
)
workers = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["server", "prefill", "decode"]) | json_values,
            "replicas": st.integers(0, 5) | json_values,
            "pods": st.integers(0, 5) | json_values,
        },
    )
    | json_values,
    max_size=3,
)
backends = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b"])},
        optional={
            "workers": workers,
            "routeWeight": st.integers(0, 100) | json_values,
            "scaleToZeroGracePeriod": json_values,
            "autoscalingPolicy": st.fixed_dictionaries({}, optional={"tolerancePercent": json_values}) | json_values,
        },
    )
    | json_values,
    max_size=3,
)
objects = st.fixed_dictionaries(
    {},
    optional={
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "backends": backends | json_values,
                "autoscalingPolicy": st.fixed_dictionaries({}, optional={"tolerancePercent": json_values})
                | json_values,
                "costExpansionRatePercent": json_values,
            },
        )
        | json_values
    },
)


@settings(max_examples=300, deadline=None)
@given(objects)
def test_defaulting_is_idempotent_and_never_crashes(obj: dict[str, Any]) -> None:
    once = apply_defaults(obj)
    twice = apply_defaults(once.obj)
    assert twice.obj == once.obj
    assert twice.warnings == []


@settings(max_examples=200, deadline=None)
@given(objects)
def test_defaulting_only_adds_or_fixes_zero_pods(obj: dict[str, Any]) -> None:
    """Every value present before is still there afterwards, except `pods: 0`, which becomes 1."""
    after = apply_defaults(obj).obj

    def check(before: Any, now: Any, path: str) -> None:
        if isinstance(before, dict):
            assert isinstance(now, dict)
            for key, value in before.items():
                if key == "pods" and value == 0 and not isinstance(value, bool) and ".workers[" in path:
                    assert now[key] == 1
                elif value is None:
                    continue  # null is "absent": it may be filled
                else:
                    check(value, now[key], f"{path}.{key}")
        elif isinstance(before, list):
            assert isinstance(now, list)
            assert len(before) == len(now)
            for index, (item, new_item) in enumerate(zip(before, now, strict=True)):
                check(item, new_item, f"{path}[{index}]")
        else:
            assert before == now

    check(obj, after, "")
