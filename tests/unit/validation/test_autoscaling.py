"""docs/design/validation.md §4 (1), (2), (4): grace periods, replica bounds, where autoscaling is set.

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

from shared.errors import format_denial
from shared.validation import validate_modelbooster
from tests.unit.factories import backend, modelbooster, policy
from tests.unit.validation.support import NO_AUTOSCALING, lines, model_level, scaled


def test_grace_period_above_1800_seconds_is_rejected_with_the_go_duration_quoted() -> None:
    obj = model_level(scaled(scaleToZeroGracePeriod="31m"))
    assert lines(obj) == [
        'spec.backends[0].scaleToZeroGracePeriod: Invalid value: "31m0s": '
        "scaleToZeroGracePeriod cannot exceed 1800 seconds"
    ]


def test_grace_period_of_exactly_1800_seconds_passes() -> None:
    assert lines(model_level(scaled(scaleToZeroGracePeriod="30m"))) == []
    assert lines(model_level(scaled(scaleToZeroGracePeriod="1800s"))) == []


def test_negative_grace_period_is_rejected() -> None:
    obj = model_level(scaled(scaleToZeroGracePeriod="-1m30s"))
    assert lines(obj) == [
        'spec.backends[0].scaleToZeroGracePeriod: Invalid value: "-1m30s": scaleToZeroGracePeriod cannot be negative'
    ]


def test_zero_grace_period_passes() -> None:
    assert lines(model_level(scaled(scaleToZeroGracePeriod="0s"))) == []


def test_unparsable_grace_period_is_a_decode_error_with_gos_wording() -> None:
    assert lines(model_level(scaled(scaleToZeroGracePeriod="30"))) == [
        'spec.backends[0].scaleToZeroGracePeriod: Invalid value: "30": time: missing unit in duration "30"'
    ]


# --- (2) replica bounds -----------------------------------------------------------------------------------


def test_min_above_max_is_rejected() -> None:
    obj = modelbooster(backend(minReplicas=3, maxReplicas=2, autoscalingPolicy=policy()))
    assert lines(obj) == [
        "spec.backends[0].minReplicas: Invalid value: 3: minReplicas cannot be greater than maxReplicas"
    ]


def test_min_equal_to_max_passes() -> None:
    assert lines(modelbooster(backend(minReplicas=2, maxReplicas=2, autoscalingPolicy=policy()))) == []


def test_sum_of_max_replicas_above_a_million_is_rejected() -> None:
    obj = modelbooster(
        backend("a", maxReplicas=600_000, autoscalingPolicy=policy()),
        backend("b", maxReplicas=600_000, autoscalingPolicy=policy()),
    )
    assert lines(obj) == [
        "spec.backends: Invalid value: 1200000: sum of maxReplicas across all backends (1200000) cannot exceed 1000000"
    ]


def test_sum_of_max_replicas_of_exactly_a_million_passes() -> None:
    obj = modelbooster(
        backend("a", maxReplicas=500_000, autoscalingPolicy=policy()),
        backend("b", maxReplicas=500_000, autoscalingPolicy=policy()),
    )
    assert lines(obj) == []


# --- (4) autoscaling scope ----------------------------------------------------------------------------------


def test_worked_example_of_the_reference_with_our_paths_and_text() -> None:
    """The reference's own error-formatting example, with our paths and text (docs/design/validation.md §4)."""
    obj = modelbooster(
        backend("backend1", minReplicas=1, maxReplicas=3, scalingCost=1, scaleToZeroGracePeriod="300ns"),
        backend("backend2", minReplicas=0, maxReplicas=3, scalingCost=2, scaleToZeroGracePeriod="600ns"),
        costExpansionRatePercent=50,
    )
    assert format_denial(validate_modelbooster(obj)) == (
        "validation failed:\n"
        "  - spec.backends[0].scalingCost: Forbidden: cost must not be provided when model-level autoscaling "
        "is not set\n"
        "  - spec.backends[0].scaleToZeroGracePeriod: Forbidden: scaleToZeroGracePeriod must not be provided when "
        "model-level autoscaling is not set\n"
        "  - spec.backends[1].scalingCost: Forbidden: cost must not be provided when model-level autoscaling "
        "is not set\n"
        "  - spec.backends[1].scaleToZeroGracePeriod: Forbidden: scaleToZeroGracePeriod must not be provided when "
        "model-level autoscaling is not set\n"
        "  - spec.costExpansionRatePercent: Forbidden: costExpansionRatePercent must not be provided when model-level "
        "autoscaling is not set\n"
        f'  - spec.backends[0]: Invalid value: "minReplicas=1, maxReplicas=3": {NO_AUTOSCALING}\n'
        f'  - spec.backends[1]: Invalid value: "minReplicas=0, maxReplicas=3": {NO_AUTOSCALING}'
    )


def test_scaling_cost_zero_is_allowed_without_model_level_autoscaling() -> None:
    assert lines(modelbooster(backend(scalingCost=0))) == []


def test_backend_level_autoscaling_needs_min_replicas_of_at_least_one() -> None:
    obj = modelbooster(backend(minReplicas=0, maxReplicas=3, autoscalingPolicy=policy()))
    assert lines(obj) == [
        "spec.backends[0].minReplicas: Invalid value: 0: minReplicas must be >= 1 when backend-level autoscaling is set"
    ]


def test_without_autoscaling_zero_equals_zero_passes() -> None:
    # The rule checks equality only (docs/design/validation.md §4, item 4), whatever its text said.
    assert lines(modelbooster(backend(minReplicas=0, maxReplicas=1)))[0].startswith("spec.backends[0]: Invalid")
    obj = modelbooster(backend(minReplicas=0, maxReplicas=1, autoscalingPolicy=policy()))
    assert lines(obj)[0].startswith("spec.backends[0].minReplicas")


def test_a_backend_level_policy_anywhere_lifts_the_equality_rule_for_all_backends() -> None:
    obj = modelbooster(backend("a", maxReplicas=3, autoscalingPolicy=policy()), backend("b", maxReplicas=5))
    assert lines(obj) == []


def test_model_level_autoscaling_requires_cost_grace_period_and_expansion_rate() -> None:
    obj = modelbooster(backend(maxReplicas=4), autoscalingPolicy=policy())
    assert lines(obj) == [
        "spec.backends[0].scalingCost: Required value: cost must be provided when model-level autoscaling is set",
        "spec.backends[0].scaleToZeroGracePeriod: Required value: scaleToZeroGracePeriod must be provided when "
        "model-level autoscaling is set",
        "spec.costExpansionRatePercent: Required value: costExpansionRatePercent must be provided and > 0 when "
        "model-level autoscaling is set",
    ]


def test_model_level_scaling_cost_zero_counts_as_missing() -> None:
    assert lines(model_level(scaled(scalingCost=0))) == [
        "spec.backends[0].scalingCost: Required value: cost must be provided when model-level autoscaling is set"
    ]


def test_model_level_cost_expansion_rate_zero_is_accepted() -> None:
    assert lines(model_level(scaled(), costExpansionRatePercent=0)) == []


def test_model_level_sum_of_min_replicas_must_be_at_least_one() -> None:
    obj = model_level(scaled("a", minReplicas=0), scaled("b", minReplicas=0))
    assert lines(obj) == [
        "spec.backends: Invalid value: 0: sum of all minReplicas must be >= 1 when model-level autoscaling is set"
    ]
    assert lines(model_level(scaled("a", minReplicas=0), scaled("b", minReplicas=1))) == []


def test_negative_min_replicas_never_reaches_the_rules_the_schema_rejects_it() -> None:
    assert lines(model_level(scaled(minReplicas=-1))) == [
        "spec.backends[0].minReplicas: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_model_and_backend_level_autoscaling_together_are_forbidden() -> None:
    obj = model_level(scaled(autoscalingPolicy=policy()))
    assert lines(obj) == [
        "spec.autoscalingPolicy: Forbidden: spec.autoscalingPolicy and spec.backends[].autoscalingPolicy cannot both "
        "be set; choose model-level or backend-level autoscaling, not both"
    ]
