"""What the webhook, the CLI and the reconciler call: a valid object, the order of the errors, the
defaulting `parse_modelbooster` adds, and the bounds on what an object with thousands of errors costs.

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

import pytest

from shared.errors import MAX_COLLECTED_ERRORS, ValidationFailed
from shared.validation import parse_modelbooster, validate_modelbooster
from tests.unit.factories import backend, modelbooster, pd_workers, policy
from tests.unit.validation.support import NO_AUTOSCALING, RATE, lines, model_level, scaled


def test_the_baseline_objects_are_valid() -> None:
    assert lines(modelbooster()) == []
    assert lines(model_level(scaled())) == []
    assert lines(modelbooster(backend(autoscalingPolicy=policy(), maxReplicas=3))) == []
    assert lines(modelbooster(backend(type="vLLMDisaggregated", workers=pd_workers()))) == []


# --- order and parse_modelbooster ---------------------------------------------------------------------------


def test_errors_come_in_the_documented_order() -> None:
    obj = modelbooster(
        backend(type="MindIE", minReplicas=2, maxReplicas=1, rateLimit={}, env=[{"name": "A"}, {"name": "A"}]),
        rateLimit={},
    )
    assert lines(obj) == [
        "spec.backends[0].minReplicas: Invalid value: 2: minReplicas cannot be greater than maxReplicas",
        f'spec.backends[0]: Invalid value: "minReplicas=2, maxReplicas=1": {NO_AUTOSCALING}',
        f"spec.rateLimit: Forbidden: {RATE}",
        f"spec.backends[0].rateLimit: Forbidden: {RATE}",
        'spec.backends[0].type: Invalid value: "MindIE": not supported yet; supported: vLLM, vLLMDisaggregated, SGLang',
        'spec.backends[0].env[1].name: Duplicate value: "A"',
    ]


def test_parse_modelbooster_defaults_before_validating_and_returns_the_model() -> None:
    model = parse_modelbooster(model_level(backend(maxReplicas=3, scalingCost=5)))
    (parsed,) = model.spec.backends
    assert parsed.scale_to_zero_grace_period == "30s"
    assert model.spec.cost_expansion_rate_percent == 200
    assert parsed.route_weight == 100
    assert parsed.workers[0].replicas == 1


def test_parse_modelbooster_raises_with_the_denial_message() -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_modelbooster(modelbooster(backend(type="MindIE")))
    assert str(caught.value) == (
        "validation failed:\n"
        '  - spec.backends[0].type: Invalid value: "MindIE": not supported yet; '
        'supported: vLLM, vLLMDisaggregated, SGLang'
    )
    assert [error.path for error in caught.value.errors] == ["spec.backends[0].type"]


# --- cost bounds -----------------------------------------------------------------------------------------


def test_collection_stops_at_the_limit_for_rule_errors() -> None:
    env = [{"name": "A", "value": "x"} for _ in range(3 * MAX_COLLECTED_ERRORS)]
    errors = validate_modelbooster(modelbooster(backend(env=env)))
    assert len(errors) == MAX_COLLECTED_ERRORS
    assert errors[-1].render() == f'spec.backends[0].env[{MAX_COLLECTED_ERRORS}].name: Duplicate value: "A"'


def test_collection_stops_at_the_limit_for_decoding_errors() -> None:
    env = [{"name": index} for index in range(3 * MAX_COLLECTED_ERRORS)]
    errors = validate_modelbooster(modelbooster(backend(env=env)))
    assert len(errors) == MAX_COLLECTED_ERRORS
    assert errors[0].render() == "spec.backends[0].env[0].name: Invalid value: 0: must be of type string"


def test_an_old_object_that_does_not_decode_adds_no_errors() -> None:
    old = modelbooster(backend(env=[{"name": 1}]))
    assert validate_modelbooster(modelbooster(), old=old) == []


def test_the_denial_of_thousands_of_errors_is_short() -> None:
    env = [{"name": "A", "value": "x"} for _ in range(3 * MAX_COLLECTED_ERRORS)]
    with pytest.raises(ValidationFailed) as failure:
        parse_modelbooster(modelbooster(backend(env=env)))
    lines = str(failure.value).splitlines()
    assert len(lines) == 1 + 20 + 1
    assert lines[-1] == (
        "  - spec.backends[0].env: and at least 980 more errors, not shown (validation stops after 1000)"
    )
