"""docs/design/validation.md §5: the features refused rather than ignored.

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

import pytest

from tests.unit.factories import backend, modelbooster, policy, worker
from tests.unit.validation.support import RATE, lines, model_level, scaled

TOPO = "topology configuration of ModelServing is not supported; create the ModelServing yourself"
PANIC = "panicPolicy is not supported; create AutoscalingPolicy + Binding yourself"
BEHAVIOR = "behavior is not supported; create AutoscalingPolicy + Binding yourself"


def test_spec_rate_limit_is_rejected() -> None:
    assert lines(modelbooster(rateLimit={"unit": "second"})) == [f"spec.rateLimit: Forbidden: {RATE}"]


@pytest.mark.parametrize(("field", "detail"), [("rateLimit", RATE), ("networkTopology", TOPO), ("topology", TOPO)])
def test_backend_unsupported_fields_are_rejected(field: str, detail: str) -> None:
    obj = modelbooster(backend("a", **{field: {"anything": 1}}))
    assert lines(obj) == [f"spec.backends[0].{field}: Forbidden: {detail}"]


def test_worker_network_topology_is_rejected() -> None:
    obj = modelbooster(backend(workers=[worker(networkTopology={"mode": "hard"})]))
    assert lines(obj) == [f"spec.backends[0].workers[0].networkTopology: Forbidden: {TOPO}"]


def test_a_behavior_with_panic_policy_yields_both_errors_at_model_level() -> None:
    obj = model_level(scaled(), autoscalingPolicy=policy(behavior={"scaleUp": {"panicPolicy": {"period": "1m"}}}))
    assert lines(obj) == [
        f"spec.autoscalingPolicy.behavior.scaleUp.panicPolicy: Forbidden: {PANIC}",
        f"spec.autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}",
    ]


def test_a_behavior_without_panic_policy_yields_one_error_at_backend_level() -> None:
    obj = modelbooster(backend(maxReplicas=3, autoscalingPolicy=policy(behavior={"scaleDown": {"period": "1m"}})))
    assert lines(obj) == [f"spec.backends[0].autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}"]


def test_empty_behavior_is_still_a_behavior() -> None:
    obj = modelbooster(backend(maxReplicas=3, autoscalingPolicy=policy(behavior={})))
    assert lines(obj) == [f"spec.backends[0].autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}"]


def test_explicit_nulls_count_as_absent_as_the_api_server_prunes_them() -> None:
    obj = modelbooster(backend(rateLimit=None, topology=None), rateLimit=None)
    assert lines(obj) == []
