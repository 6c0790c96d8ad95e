"""The advice after the denial in a Failed ModelBooster's status: what to remove, and how."""

from __future__ import annotations

import json

from shared.errors import forbidden, invalid
from shared.remedy import MAX_REMOVALS, NOT_RECONCILED, how_to_fix
from shared.unsupported import BEHAVIOR_DETAIL, PANIC_POLICY_DETAIL, TOPOLOGY_DETAIL


def _patch(text: str) -> list[dict[str, str]]:
    line = next(line for line in text.split("\n") if "kubectl patch" in line)
    assert " modelbooster qwen -n llm --type=json -p '" in line
    parsed: list[dict[str, str]] = json.loads(line.split(" -p ", 1)[1].strip("'"))
    return parsed


def test_a_field_inside_another_removed_field_is_not_removed_twice() -> None:
    errors = [
        forbidden("spec.backends[1].autoscalingPolicy.behavior.scaleUp.panicPolicy", PANIC_POLICY_DETAIL),
        forbidden("spec.backends[1].autoscalingPolicy.behavior", BEHAVIOR_DETAIL),
        forbidden("spec.backends[0].workers[2].networkTopology", TOPOLOGY_DETAIL),
    ]
    text = how_to_fix(errors, namespace="llm", name="qwen")
    assert text.split("\n")[0] == NOT_RECONCILED
    assert _patch(text) == [
        {"op": "remove", "path": "/spec/backends/1/autoscalingPolicy/behavior"},
        {"op": "remove", "path": "/spec/backends/0/workers/2/networkTopology"},
    ]
    assert "Change the other fields" not in text


def test_other_errors_get_no_command_and_a_mix_gets_both() -> None:
    bad = invalid("spec.backends[0].minReplicas", 3, "minReplicas cannot be greater than maxReplicas")
    assert how_to_fix([bad], namespace="llm", name="qwen") == (
        f"{NOT_RECONCILED}\nChange the other fields listed above so that they pass."
    )
    mixed = how_to_fix([bad, forbidden("spec.rateLimit", "rate limiting is not supported")], namespace="llm",
                       name="qwen")  # fmt: skip
    assert mixed.endswith("Change the other fields listed above so that they pass.")
    assert "kubectl patch" not in mixed  # a detail that is not one of the unsupported features'


def test_the_command_is_bounded() -> None:
    errors = [forbidden(f"spec.backends[{i}].topology", TOPOLOGY_DETAIL) for i in range(MAX_REMOVALS + 4)]
    assert len(_patch(how_to_fix(errors, namespace="llm", name="qwen"))) == MAX_REMOVALS
