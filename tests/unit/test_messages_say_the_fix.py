"""Refusals that name the fix: a size written as elsewhere (`8GB`), a backend type in the wrong case, a list written
as a map, a metric target that is no number."""

from __future__ import annotations

import pytest

from shared.validation import validate_modelbooster
from tests.unit.factories import backend, modelbooster, worker


def _only_error(obj: dict[str, object]) -> str:
    [error] = validate_modelbooster(obj)
    return error.render()


def test_memory_8gb_says_8g_or_8gi() -> None:
    obj = modelbooster(backend(workers=[worker(resources={"limits": {"memory": "8GB"}})]))
    assert _only_error(obj) == (  # no regular expression after it: the suggestion is the fix
        'spec.backends[0].workers[0].resources.limits[memory]: Invalid value: "8GB": '
        'did you mean "8G" or "8Gi"? (G is 10^9, Gi is 2^30)'
    )


def test_a_divisor_says_the_fix_too() -> None:
    env = [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1MB"}}}]
    assert 'Invalid value: "1MB": did you mean "1M" or "1Mi"? (M is 10^6, Mi is 2^20)' in _only_error(
        modelbooster(backend(env=env))
    )


@pytest.mark.parametrize("written", ["vllm", "VLLM", "v-llm"])
def test_a_backend_type_in_the_wrong_case_lists_only_served_types_and_names_the_right_one(written: str) -> None:
    assert _only_error(modelbooster(backend(type=written))) == (
        f'spec.backends[0].type: Unsupported value: "{written}": '
        f'supported values: "vLLM", "vLLMDisaggregated", "SGLang"; '
        'did you mean "vLLM"?'
    )


def test_the_single_backend_shape_gets_the_same_list() -> None:
    single = {"name": "a", "type": "vllm", "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "replicas": 1}
    obj = modelbooster()
    obj["spec"] = {"backend": {**single, "workers": [worker()]}}
    [line] = [error.render() for error in validate_modelbooster(obj) if error.path == "spec.backend.type"]
    assert line == (
        'spec.backend.type: Unsupported value: "vllm": supported values: "vLLM", "vLLMDisaggregated", "SGLang"; '
        'did you mean "vLLM"?'
    )


def test_another_enum_names_its_value_in_the_right_case() -> None:
    assert _only_error(modelbooster(backend(workers=[worker(type="Server")]))).endswith('did you mean "server"?')


def test_backends_written_as_a_map_points_at_spec_backend() -> None:
    obj = modelbooster()
    obj["spec"]["backends"] = obj["spec"]["backends"][0]
    assert _only_error(obj).endswith(
        ": must be of type array: a list of backends (`- name: ...`); one backend alone is written as spec.backend"
    )


def test_a_target_value_error_suggests_a_number_not_a_size() -> None:
    obj = modelbooster(backend(autoscalingPolicy={"metrics": [{"metricName": "m", "targetValue": "ten"}]}))
    assert _only_error(obj).endswith(
        ": not a quantity: write a number with an optional suffix, such as 10, 0.5 or 500m"
    )
