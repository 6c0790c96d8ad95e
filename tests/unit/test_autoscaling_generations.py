"""Which generation of Kthena's autoscaling CRDs a cluster serves, read off the served schemas."""

from __future__ import annotations

from typing import Any

import pytest

from shared.autoscaling_generations import Generation, kinds_needed, missing_kinds, served_generation


def _schema(*spec_fields: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {name: {"type": "object"} for name in spec_fields}}},
    }


V01_POLICY = _schema("tolerancePercent", "metrics", "behavior")
V01_BINDING = _schema("policyRef", "scalingConfiguration", "optimizerConfiguration")
V02_BINDING = _schema("policyRef", "homogeneousTarget", "heterogeneousTarget")
V10_POLICY = _schema("tolerancePercent", "metrics", "behavior", "homogeneousTarget", "heterogeneousTarget")


@pytest.mark.parametrize(
    ("policy", "binding", "expected"),
    [
        (V01_POLICY, V01_BINDING, Generation.V0_1),
        (V01_POLICY, V02_BINDING, Generation.V0_2),
        (V10_POLICY, None, Generation.V1_0),
        (V10_POLICY, V01_BINDING, Generation.V1_0),  # a Binding CRD left behind changes nothing
        (V01_POLICY, None, None),  # a policy that needs a Binding the cluster lacks
        (None, V01_BINDING, None),
        (None, None, None),
    ],
)
def test_served_generation(policy: Any, binding: Any, expected: Generation | None) -> None:
    assert served_generation(policy, binding) is expected


def test_missing_kinds_name_what_autoscaling_lacks() -> None:
    assert missing_kinds(None, V01_BINDING) == ["AutoscalingPolicy"]
    assert missing_kinds(V01_POLICY, None) == ["AutoscalingPolicyBinding"]
    assert missing_kinds(V10_POLICY, None) == []
    assert missing_kinds(V01_POLICY, V02_BINDING) == []


def test_a_schema_without_properties_reads_as_the_oldest_shape() -> None:
    assert served_generation({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, {}) is Generation.V0_1


def test_kinds_needed() -> None:
    assert kinds_needed(Generation.V1_0) == ("AutoscalingPolicy",)
    assert kinds_needed(Generation.V0_2) == ("AutoscalingPolicy", "AutoscalingPolicyBinding")
