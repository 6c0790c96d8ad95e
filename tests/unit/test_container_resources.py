"""A worker's resources are checked as Kubernetes checks a container's when a pod is created
(docs/design/validation.md §6, item 10): what the pods would be refused for is refused at admission.

Expected lines are written by hand from Kubernetes' container validation (its messages: `must be an integer`,
`must be equal to <name> limit of <limit>`, `Limit must be set for non overcommitable resources`)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.validation import validate_modelbooster
from tests.unit.factories import backend, modelbooster, single_backend, single_modelbooster, worker

AT = "spec.backends[0].workers[0].resources"
NAMES = (
    "must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-<size>) or an extended "
    "resource with its domain (nvidia.com/gpu)"
)


def lines(resources: dict[str, Any]) -> list[str]:
    obj = modelbooster(backend(workers=[worker(resources=resources)]))
    return [error.render() for error in validate_modelbooster(obj)]


@pytest.mark.parametrize(
    "resources",
    [
        {"limits": {"nvidia.com/gpu": 1}},  # the request defaults to the limit
        {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": 2}},  # equal, written two ways
        {"limits": {"nvidia.com/gpu": "1000m"}, "requests": {"nvidia.com/gpu": "1"}},  # 1000m is 1
        {"limits": {"cpu": "8", "memory": "16Gi"}, "requests": {"cpu": "500m", "memory": "12Gi"}},
        {"requests": {"cpu": 4}},  # native resources may go without a limit
        {"limits": {"hugepages-2Mi": "1Gi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "1Gi"}},
        {"limits": {"ephemeral-storage": "10Gi", "example.com/foo": 3}},
    ],
)
def test_what_kubernetes_admits_passes(resources: dict[str, Any]) -> None:
    assert lines(resources) == []


def test_an_extended_resource_is_a_whole_number() -> None:
    assert lines({"limits": {"nvidia.com/gpu": "0.5"}}) == [
        f'{AT}.limits[nvidia.com/gpu]: Invalid value: "0.5": must be an integer'
    ]
    assert lines({"limits": {"nvidia.com/gpu": "500m"}, "requests": {"nvidia.com/gpu": "500m"}}) == [
        f'{AT}.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
        f'{AT}.requests[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
    ]
    # Every digit counts, past decimal's default 28.
    assert lines({"limits": {"nvidia.com/gpu": "1" * 30 + ".5"}}) == [
        f'{AT}.limits[nvidia.com/gpu]: Invalid value: "{"1" * 30}.5": must be an integer'
    ]
    # CPU is not an extended resource: fractions are its everyday form.
    assert lines({"limits": {"cpu": "0.5"}}) == []


def test_an_extended_request_equals_its_limit_and_needs_one() -> None:
    assert lines({"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1}}) == [
        f"{AT}.requests[nvidia.com/gpu]: Invalid value: 1: must be equal to nvidia.com/gpu limit of 2"
    ]
    assert lines({"requests": {"nvidia.com/gpu": 1}}) == [
        f"{AT}.limits[nvidia.com/gpu]: Required value: Limit must be set for non overcommitable resources: "
        "set limits[nvidia.com/gpu] (the request defaults to it)"
    ]
    assert lines({"limits": {"hugepages-1Gi": "2Gi", "memory": "1Gi"}, "requests": {"hugepages-1Gi": "1Gi"}}) == [
        f'{AT}.requests[hugepages-1Gi]: Invalid value: "1Gi": must be equal to hugepages-1Gi limit of 2Gi'
    ]


def test_a_native_request_stays_within_its_limit() -> None:
    assert lines({"limits": {"memory": "8Gi"}, "requests": {"memory": "16Gi"}}) == [
        f'{AT}.requests[memory]: Invalid value: "16Gi": must be less than or equal to memory limit of 8Gi'
    ]


def test_no_quantity_is_negative() -> None:
    assert lines({"requests": {"cpu": "-1"}}) == [
        f'{AT}.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'
    ]


def test_resource_names_are_those_containers_have() -> None:
    assert lines({"limits": {"gpu": 1, "memroy": "1Gi", "tpu": 1}}) == [
        f'{AT}.limits[gpu]: Invalid value: "gpu": {NAMES}; did you mean "nvidia.com/gpu"?',
        f'{AT}.limits[memroy]: Invalid value: "memroy": {NAMES}; did you mean "memory"?',
        f'{AT}.limits[tpu]: Invalid value: "tpu": {NAMES}',
    ]
    assert lines({"limits": {"Nvidia.com/gpu": 1}}) == [
        f'{AT}.limits[Nvidia.com/gpu]: Invalid value: "Nvidia.com/gpu": must be a qualified name (<domain>/<name>, '
        "e.g. nvidia.com/gpu)"
    ]


def test_a_single_backend_reports_at_its_own_path() -> None:
    one = single_backend(workers=[worker(resources={"limits": {"nvidia.com/gpu": "0.5"}})])
    assert [error.render() for error in validate_modelbooster(single_modelbooster(one))] == [
        'spec.backend.workers[0].resources.limits[nvidia.com/gpu]: Invalid value: "0.5": must be an integer'
    ]


def test_long_text_is_judged_but_never_kept_in_a_cache() -> None:
    """Verdicts are cached for the few names and amounts every object repeats; a hostile object's megabyte of
    text must not stay in memory after its request."""
    from shared import resources

    name, amount = "example.com/" + "x" * 100_000, "1" * 100_000
    before = (resources._cached_kind.cache_info().currsize, resources._cached_value.cache_info().currsize)
    found = lines({"limits": {name: 1, "nvidia.com/gpu": amount + ".5"}})
    assert [line.split(": ", 2)[1] for line in found] == ["Invalid value", "Invalid value"]
    assert found[1].endswith("must be an integer")
    after = (resources._cached_kind.cache_info().currsize, resources._cached_value.cache_info().currsize)
    assert after == before
