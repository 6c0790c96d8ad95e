"""Kthena v0.2-v0.4's single backend (docs/design/api.md §8): `spec.backend` with `minReplicas`/`maxReplicas`,
scaled by the model-level `spec.autoscalingPolicy`. Accepted beside the two other shapes, by the webhook's
function and the CRD's CEL rules with the same lines, read as the list of one backend whose own policy is the
model's, and reported at the paths the user wrote. Expected lines are written by hand."""

from __future__ import annotations

from typing import Any

import pytest

from shared.defaults import apply_defaults
from shared.external_scaling import NO_AUTOSCALING_DETAIL
from shared.validation import parse_modelbooster, validate_modelbooster, validate_update
from tests.unit.crd_support import cel_denials, openapi_schema, undeclared_fields
from tests.unit.factories import modelbooster, policy, range_backend, single_backend, single_modelbooster, worker

NO_REPLICAS = (
    "spec.backend: Required value: must specify replicas (a fixed count, as Kthena v1.0 writes it) or minReplicas "
    "and maxReplicas (a range, as Kthena v0.2-v0.4 write it; needed with spec.autoscalingPolicy)"
)
COUNT_AND_RANGE = (
    "spec.backend.replicas: Forbidden: may not be set together with minReplicas or maxReplicas: replicas is Kthena "
    "v1.0's fixed count, minReplicas and maxReplicas are Kthena v0.2-v0.4's range; keep one"
)
HALF = (
    "spec.backend.{missing}: Required value: {given} is set, so this backend is read as Kthena v0.2-v0.4's, which "
    "needs {missing} too (or write replicas alone, a fixed count as Kthena v1.0 does)"
)


def lines(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> list[str]:
    return [error.render() for error in validate_modelbooster(obj, old=old)]


def cel_lines(obj: dict[str, Any]) -> list[str]:
    return cel_denials(obj, openapi_schema("ModelBooster"))


def scaled(one: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    spec.setdefault("autoscalingPolicy", policy())
    return single_modelbooster(one or range_backend(minReplicas=1, maxReplicas=4), **spec)


@pytest.mark.parametrize("autoscaled", [False, True], ids=["fixed-range", "autoscaled"])
def test_the_shape_passes_the_crd_and_the_webhook(autoscaled: bool) -> None:
    obj = scaled() if autoscaled else single_modelbooster(range_backend(minReplicas=2, maxReplicas=2))
    assert undeclared_fields(obj, openapi_schema("ModelBooster")) == []
    assert cel_lines(obj) == []
    assert lines(apply_defaults(obj).obj) == []


def test_its_policy_is_the_one_backends_own_and_stays_where_it_was_written() -> None:
    obj = scaled()
    defaulted = apply_defaults(obj).obj
    # Only the policy's own default: Kthena v0.1.0's optimizer defaults do not apply to one backend.
    assert defaulted["spec"]["autoscalingPolicy"]["tolerancePercent"] == 10
    assert "costExpansionRatePercent" not in defaulted["spec"]
    assert "scaleToZeroGracePeriod" not in defaulted["spec"]["backend"]
    booster = parse_modelbooster(obj)
    (internal,) = booster.spec.backends
    assert (internal.min_replicas, internal.max_replicas) == (1, 4)
    assert internal.autoscaling_policy is not None
    assert booster.spec.autoscaling_policy is None
    wire = booster.to_wire()["spec"]
    assert set(wire) == {"backend", "autoscalingPolicy"}
    assert wire["autoscalingPolicy"] == defaulted["spec"]["autoscalingPolicy"]
    assert {"minReplicas", "maxReplicas"} <= set(wire["backend"])
    assert "replicas" not in wire["backend"]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"replicas": 2}, [COUNT_AND_RANGE]),
        ({"minReplicas": None, "maxReplicas": None}, [NO_REPLICAS]),
        ({"maxReplicas": None}, [HALF.format(given="minReplicas", missing="maxReplicas")]),
        ({"minReplicas": None}, [HALF.format(given="maxReplicas", missing="minReplicas")]),
    ],
    ids=["count-and-range", "neither", "min-only", "max-only"],
)
def test_a_backend_names_one_replica_form_webhook_and_cel_alike(fields: dict[str, Any], expected: list[str]) -> None:
    one = {key: value for key, value in {**range_backend(), **fields}.items() if value is not None}
    obj = single_modelbooster(one)
    assert lines(obj) == expected
    assert cel_lines(obj) == expected


def test_a_policy_beside_no_replica_form_still_reads_as_a_range() -> None:
    one = {key: value for key, value in range_backend().items() if key not in ("minReplicas", "maxReplicas")}
    assert lines(single_modelbooster(one, autoscalingPolicy=policy())) == [NO_REPLICAS]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (single_modelbooster(range_backend(minReplicas=1, maxReplicas=3)),
         [f'spec.backend: Invalid value: "minReplicas=1, maxReplicas=3": {NO_AUTOSCALING_DETAIL}']),
        (scaled(range_backend(minReplicas=5, maxReplicas=3)),
         ["spec.backend.minReplicas: Invalid value: 5: minReplicas cannot be greater than maxReplicas"]),
        (scaled(range_backend(minReplicas=0, maxReplicas=3)), []),  # admitted, as by Kthena v0.4.0 (a warning)
        (single_modelbooster(range_backend(maxReplicas=0, minReplicas=0)),
         ["spec.backend.maxReplicas: Invalid value: 0: must be greater than or equal to 1"]),
        (scaled(costExpansionRatePercent=200),
         ["spec.costExpansionRatePercent: Forbidden: costExpansionRatePercent must not be provided with a single "
          "spec.backend: it weighs the costs of several spec.backends under model-level autoscaling"]),
        (single_modelbooster(range_backend(), autoscalingPolicy={"metrics": []}),
         ["spec.autoscalingPolicy.metrics: Invalid value: 0: should have at least 1 items"]),
    ],
    ids=["range-without-autoscaling", "min-above-max", "scale-from-zero", "max-bound", "optimizer-field",
         "policy-metrics"],
)  # fmt: skip
def test_the_rules_read_it_at_its_own_paths(obj: dict[str, Any], expected: list[str]) -> None:
    assert lines(apply_defaults(obj).obj) == expected


def test_a_cross_field_error_reads_the_model_level_policy() -> None:
    obj = scaled(range_backend(minReplicas=1, maxReplicas=3))
    obj["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "true"}
    (error,) = validate_modelbooster(apply_defaults(obj).obj)
    assert error.path == "metadata.annotations[modelbooster.io/external-replicas]"
    assert error.reads == ("metadata.annotations", "spec.autoscalingPolicy")


def test_scaling_from_zero_is_admitted_with_a_warning_and_a_list_backend_keeps_the_rule() -> None:
    defaulted = apply_defaults(scaled(range_backend(minReplicas=0, maxReplicas=3)))
    assert validate_modelbooster(defaulted.obj) == []
    [warning] = defaulted.warnings
    assert warning.startswith("spec.backend.minReplicas: 0 with spec.autoscalingPolicy: the backend starts with no pod")
    assert "nothing scales it up from zero" in warning
    assert apply_defaults(scaled(range_backend(minReplicas=1, maxReplicas=3))).warnings == []
    # A backend's own policy in a list keeps v0.1.0's rule (Kthena v0.1.0 allowed zero only under its optimizer).
    own = {**range_backend(minReplicas=0, maxReplicas=3), "autoscalingPolicy": policy()}
    listed = {**scaled(), "spec": {"backends": [own]}}
    [error] = validate_modelbooster(apply_defaults(listed).obj)
    assert error.detail == "minReplicas must be >= 1 when backend-level autoscaling is set"


# --- UPDATE: objects of this shape stay manageable -------------------------------------------------------------------


def test_an_update_carries_over_a_problem_a_kthena_v04_object_was_stored_with() -> None:
    """Kthena v0.4 accepted a policy `behavior`, which we do not support: an update that leaves it is admitted."""
    stored = scaled(autoscalingPolicy=policy(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}))
    relabelled = scaled(autoscalingPolicy=policy(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}))
    relabelled["spec"]["backend"]["maxReplicas"] = 8
    verdict = validate_update(apply_defaults(relabelled).obj, old=apply_defaults(stored).obj)
    assert verdict.errors == []
    assert [error.path for error in verdict.carried] == ["spec.autoscalingPolicy.behavior"]
    # Changing it is refused by name.
    changed = scaled(autoscalingPolicy=policy(behavior={"scaleDown": {"stabilizationWindowSeconds": 30}}))
    refused = validate_update(apply_defaults(changed).obj, old=apply_defaults(stored).obj)
    assert [error.path for error in refused.errors] == ["spec.autoscalingPolicy.behavior"]


def test_an_unchanged_range_without_autoscaling_is_carried_over_and_a_new_one_refused() -> None:
    stored = apply_defaults(single_modelbooster(range_backend(minReplicas=1, maxReplicas=3))).obj
    edited = apply_defaults(single_modelbooster(range_backend(minReplicas=1, maxReplicas=3), name="m")).obj
    edited["metadata"]["labels"] = {"team": "a"}
    assert validate_update(edited, old=stored).errors == []
    widened = apply_defaults(single_modelbooster(range_backend(minReplicas=1, maxReplicas=5))).obj
    assert [error.path for error in validate_update(widened, old=stored).errors] == ["spec.backend"]


def as_kthena_v1(worker_replicas: int) -> dict[str, Any]:
    return single_modelbooster(single_backend("a", workers=[worker(replicas=worker_replicas)]))


def as_list(worker_replicas: int) -> dict[str, Any]:
    return modelbooster(range_backend("a", workers=[worker(replicas=worker_replicas)]))


@pytest.mark.parametrize("shape", [as_kthena_v1, as_list], ids=["to-kthena-v1", "to-list"])
def test_moving_to_another_shape_keeps_the_backend_under_the_same_rules(shape: Any) -> None:
    """The same backend name is the same ModelServing: its workers' replicas stay fixed across shapes."""
    stored = single_modelbooster(range_backend("a", workers=[worker(replicas=1)]))
    assert lines(shape(1), old=stored) == []
    (error,) = validate_modelbooster(shape(2), old=stored)
    assert error.path == ("spec.backend" if shape is as_kthena_v1 else "spec.backends[0]") + ".workers[0].replicas"
    assert error.type == "Forbidden"
