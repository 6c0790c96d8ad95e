"""Objects that do not decode: field errors with real JSON paths and apiserver-like wording, never a crash."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.api.modelbooster import ModelBooster
from shared.decoding import ROOT_PATH, render_location
from shared.schema import structural_schema
from shared.validation import validate_modelbooster
from tests.unit.factories import backend, modelbooster, worker


def lines(obj: Any) -> list[str]:
    return [error.render() for error in validate_modelbooster(obj)]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            modelbooster(backend(minReplicas="1")),
            'spec.backends[0].minReplicas: Invalid value: "1": must be of type integer',
        ),
        (
            modelbooster(backend(maxReplicas=0)),
            "spec.backends[0].maxReplicas: Invalid value: 0: must be greater than or equal to 1",
        ),
        (
            modelbooster(backend(routeWeight=101)),
            "spec.backends[0].routeWeight: Invalid value: 101: must be less than or equal to 100",
        ),
        (
            modelbooster(backend(type="TGI")),
            # Only the served types: the others the enum declares are refused by a rule of their own.
            'spec.backends[0].type: Unsupported value: "TGI": supported values: "vLLM", "vLLMDisaggregated", "SGLang"',
        ),
        (
            modelbooster(backend(modelURI="http://x")),
            "spec.backends[0].modelURI: Invalid value: \"http://x\": should match '^(hf://|s3://|pvc://|obs://|ms://).+'",
        ),
        (
            modelbooster(backend("Bad_Name")),
            "spec.backends[0].name: Invalid value: \"Bad_Name\": should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
        ),
        (modelbooster(backend(workers=[])), "spec.backends[0].workers: Invalid value: 0: should have at least 1 items"),
        (
            modelbooster(backend(workers=[worker(pods=-1)])),
            "spec.backends[0].workers[0].pods: Invalid value: -1: must be greater than or equal to 0",
        ),
        (modelbooster(backend(unknown=1)), "spec.backends[0].unknown: Forbidden: field not declared in schema"),
        (
            modelbooster(backend(minReplica=1)),
            'spec.backends[0].minReplica: Forbidden: field not declared in schema; did you mean "minReplicas"?',
        ),
        (
            {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "metadata": {}},
            "spec: Required value",
        ),
        (modelbooster(backend(env=[{"value": "x"}])), "spec.backends[0].env[0].name: Required value"),
        (
            modelbooster(backend(env=[{"name": "A", "value": 1}])),
            "spec.backends[0].env[0].value: Invalid value: 1: must be of type string",
        ),
        (
            modelbooster(backend(workers=[worker(resources={"limits": {"nvidia.com/gpu": True}})])),
            "spec.backends[0].workers[0].resources.limits[nvidia.com/gpu]: Invalid value: true: quantities must be an "
            "integer or a string such as '500m' or '2Gi'",
        ),
        (
            modelbooster(backend(workers=[worker(resources={"requests": {"cpu": 0.5}})])),
            "spec.backends[0].workers[0].resources.requests[cpu]: Invalid value: 0.5: quantities must be an integer or "
            "a string such as '500m' or '2Gi'",
        ),
        (
            modelbooster(modelMatch={"headers": {"x": {"exact": 1}}}),
            "spec.modelMatch.headers[x].exact: Invalid value: 1: must be of type string",
        ),
        (
            modelbooster(backend(workers=[worker(tolerations=[{"tolerationSeconds": "5"}])])),
            'spec.backends[0].workers[0].tolerations[0].tolerationSeconds: Invalid value: "5": must be of type integer',
        ),
        (
            modelbooster(backend(autoscalingPolicy={"metrics": []})),
            "spec.backends[0].autoscalingPolicy.metrics: Invalid value: 0: should have at least 1 items",
        ),
        (
            modelbooster(*[backend(f"b{index}") for index in range(17)]),
            "spec.backends: Too many: must have at most 16 items",
        ),
        (modelbooster(owner=["me"]), 'spec.owner: Invalid value: ["me"]: must be of type string'),
    ],
)
def test_decode_errors(obj: dict[str, Any], expected: str) -> None:
    assert lines(obj) == [expected]


def test_too_long_spec_name() -> None:
    obj = modelbooster()
    obj["spec"]["name"] = "x" * 65
    assert lines(obj) == ["spec.name: Too long: may not be more than 64 characters"]


def test_a_field_by_its_python_name_is_unknown_on_the_wire() -> None:
    # Python code builds models by field name; a manifest naming `min_replicas` names no field the API
    # server knows, so it must not stand in for `minReplicas` (it did, before decoding asked for wire names).
    spec_backend = backend()
    spec_backend["min_replicas"] = spec_backend.pop("minReplicas")
    assert lines(modelbooster(spec_backend)) == [
        'spec.backends[0].minReplicas: Required value: found "min_replicas": did you mean "minReplicas"?',
        'spec.backends[0].min_replicas: Forbidden: field not declared in schema; did you mean "minReplicas"?',
    ]


def test_several_decode_errors_are_all_reported_once_each() -> None:
    obj = modelbooster(backend(minReplicas="x", maxReplicas="y", workers=[worker(replicas="z")]))
    assert lines(obj) == [
        'spec.backends[0].minReplicas: Invalid value: "x": must be of type integer',
        'spec.backends[0].maxReplicas: Invalid value: "y": must be of type integer',
        'spec.backends[0].workers[0].replicas: Invalid value: "z": must be of type integer',
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("text", 'spec: Invalid value: "text": must be of type object'),
        ({"backends": "x"}, 'spec.backends: Invalid value: "x": must be of type array'),
        ({"backends": [3]}, "spec.backends[0]: Invalid value: 3: must be of type object"),
        (
            {
                "backends": [
                    {
                        "name": "a",
                        "type": "vLLM",
                        "modelURI": "hf://x",
                        "minReplicas": 1,
                        "maxReplicas": 1,
                        "workers": {},
                    }
                ]
            },
            "spec.backends[0].workers: Invalid value: {}: must be of type array",
        ),
    ],
)
def test_malformed_shapes(spec: object, expected: str) -> None:
    obj = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "spec": spec}
    assert lines(obj) == [expected]


def test_render_location_skips_union_tags_and_uses_brackets_for_map_keys() -> None:
    schema = structural_schema(ModelBooster)
    loc = ("spec", "backends", 0, "workers", 1, "resources", "limits", "cpu", "function-after[check()]", "int")
    path, node = render_location(loc, schema)
    assert path == "spec.backends[0].workers[1].resources.limits[cpu]"
    assert node.get("x-kubernetes-int-or-string") is True
    assert render_location((), schema)[0] == ROOT_PATH


json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)
json_any = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
field_names = st.sampled_from(
    [
        "name",
        "type",
        "modelURI",
        "minReplicas",
        "maxReplicas",
        "workers",
        "config",
        "env",
        "replicas",
        "pods",
        "autoscalingPolicy",
        "behavior",
        "rateLimit",
        "loraAdapters",
        "cacheURI",
        "scalingCost",
        "image",
    ]
)
shaped = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(field_names, inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(spec=shaped | json_any)
def test_no_input_makes_validation_crash(spec: object) -> None:
    obj = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "spec": spec}
    for error in validate_modelbooster(obj):
        assert error.render().startswith(error.path)


@settings(max_examples=200, deadline=None)
@given(
    mutation=st.sampled_from(
        ["minReplicas", "maxReplicas", "workers", "config", "env", "loraAdapters", "cacheURI", "type"]
    ),
    value=json_any,
)
def test_one_bad_field_in_a_valid_object_never_crashes(mutation: str, value: object) -> None:
    item = backend()
    if mutation == "config":
        item["workers"][0]["config"] = value
    else:
        item[mutation] = value
    validate_modelbooster(modelbooster(item))
