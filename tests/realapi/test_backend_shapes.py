"""The three backend shapes on a real kube-apiserver v1.36, with the CRD's schema and CEL rules alone (no
webhook in the test's namespace): Kthena v0.2-v0.4's `spec.backend` with `minReplicas`/`maxReplicas` (and the
model-level policy) is accepted and stored as written, nothing pruned; a backend with `replicas` beside a range
field, one with half a range or none, a policy beside `replicas`, and neither or both of `spec.backend` and
`spec.backends` are refused with the webhook's own lines (docs/design/api.md §8)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes.client import ApiException

from shared.backend_shape import (
    BOTH_DETAIL,
    COUNT_AND_RANGE_DETAIL,
    COUNT_AUTOSCALING_DETAIL,
    HALF_RANGE_DETAIL,
    NEITHER_DETAIL,
    NO_REPLICAS_DETAIL,
)
from tests.e2e.user import custom, load_example, renamed
from tests.realapi.session import RealSession

WORKLOAD, VERSION, PLURAL = "workload.serving.volcano.sh", "v1alpha1", "modelboosters"
RANGED = ["single-backend-kthena-v04.yaml", "single-backend-autoscaling-kthena-v04.yaml",
          "pd-single-backend-kthena-v04.yaml"]  # fmt: skip
POLICY = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}


def _create(user: RealSession, namespace: str, document: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = custom(user).create_namespaced_custom_object(
        WORKLOAD, VERSION, namespace, PLURAL, document
    )
    return created


def _causes(user: RealSession, namespace: str, document: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiException) as refused:
        _create(user, namespace, document)
    assert refused.value.status == 422
    status = json.loads(refused.value.body or "{}")
    return sorted((cause["field"], cause["reason"], cause["message"]) for cause in status["details"]["causes"])


@pytest.mark.parametrize("example", RANGED)
def test_a_kthena_v04_object_is_accepted_and_stored_as_written(
    real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession, example: str
) -> None:
    document = renamed(load_example(example), example.removesuffix(".yaml"), real_namespace)
    stored = _create(real_user, real_namespace, document)
    # Nothing pruned: the range and the model-level policy are declared; only the schema's defaults are added.
    backend, written = stored["spec"]["backend"], document["spec"]["backend"]
    assert (backend["minReplicas"], backend["maxReplicas"]) == (written["minReplicas"], written["maxReplicas"])
    assert "replicas" not in backend
    assert stored["spec"].get("autoscalingPolicy", {}).get("metrics") == document["spec"].get(
        "autoscalingPolicy", {}
    ).get("metrics")
    assert set(stored["spec"]) == set(document["spec"])


def _ranged(namespace: str, name: str) -> dict[str, Any]:
    return renamed(load_example("single-backend-kthena-v04.yaml"), name, namespace)


def test_replicas_beside_a_range_field_is_refused_by_the_crd(
    real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession
) -> None:
    for extra, name in (({"replicas": 1}, "count-and-range"),
                        ({"replicas": 1, "minReplicas": None}, "count-and-max")):  # fmt: skip
        document = _ranged(real_namespace, name)
        document["spec"]["backend"].update(extra)
        document["spec"]["backend"] = {k: v for k, v in document["spec"]["backend"].items() if v is not None}
        assert _causes(real_user, real_namespace, document) == [
            ("spec.backend.replicas", "FieldValueForbidden", f"Forbidden: {COUNT_AND_RANGE_DETAIL}")
        ]


def test_half_a_range_or_none_is_refused_by_the_crd(
    real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession
) -> None:
    half = _ranged(real_namespace, "half")
    del half["spec"]["backend"]["maxReplicas"]
    assert _causes(real_user, real_namespace, half) == [
        ("spec.backend.maxReplicas", "FieldValueRequired",
         "Required value: " + HALF_RANGE_DETAIL.format(given="minReplicas", missing="maxReplicas")),
    ]  # fmt: skip
    none = _ranged(real_namespace, "none")
    del none["spec"]["backend"]["minReplicas"], none["spec"]["backend"]["maxReplicas"]
    assert _causes(real_user, real_namespace, none) == [
        ("spec.backend", "FieldValueRequired", f"Required value: {NO_REPLICAS_DETAIL}")
    ]


def test_a_policy_beside_replicas_is_refused_by_the_crd(
    real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession
) -> None:
    document = renamed(load_example("single-backend-kthena-v1.yaml"), "counted", real_namespace)
    document["spec"]["autoscalingPolicy"] = copy.deepcopy(POLICY)
    assert _causes(real_user, real_namespace, document) == [
        ("spec.autoscalingPolicy", "FieldValueForbidden", f"Forbidden: {COUNT_AUTOSCALING_DETAIL}")
    ]


def test_neither_and_both_shapes_get_their_own_type_and_line(
    real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession
) -> None:
    neither = _ranged(real_namespace, "neither")
    del neither["spec"]["backend"]
    assert _causes(real_user, real_namespace, neither) == [("spec", "FieldValueRequired",
                                                            f"Required value: {NEITHER_DETAIL}")]  # fmt: skip
    both = _ranged(real_namespace, "both")
    both["spec"]["backends"] = [load_example("single-vllm-cpu.yaml")["spec"]["backends"][0]]
    assert _causes(real_user, real_namespace, both) == [
        ("spec.backends", "FieldValueForbidden", f"Forbidden: {BOTH_DETAIL}")
    ]
