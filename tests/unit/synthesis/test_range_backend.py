"""Children of a ModelBooster written in Kthena v0.2-v0.4's shape (docs/design/api.md §8): one `spec.backend`
with `minReplicas`/`maxReplicas`, scaled by the model-level `spec.autoscalingPolicy`.

As Kthena v0.4.0 creates them: ModelServing and ModelServer `<model>-<backend>` with the ModelServing at
`minReplicas`, ModelRoute `<model>`, and with a policy an AutoscalingPolicy and a Binding `<model>-<backend>`
over that range — with every fix of docs/design/quirks.md, since the one backend is rendered by the code that
renders a backend of either other shape (the equivalences below hold it there).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from shared.validation import parse_modelbooster
from tests.unit.synthesis.support import find, load_expected, load_input, masked

POLICY = {"tolerancePercent": 10, "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}


def children_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return synthesize(parse_modelbooster(doc), SynthesisSettings())


def test_an_autoscaled_backend_matches_the_expected_objects() -> None:
    children = masked(children_of(load_input("range-autoscaling")))
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("ModelServing", "phi-gpu"),
        ("ModelServer", "phi-gpu"),
        ("ModelRoute", "phi"),
        ("AutoscalingPolicy", "phi-gpu"),
        ("AutoscalingPolicyBinding", "phi-gpu"),
    ]
    assert children[3:] == load_expected("range-autoscaling")
    assert children[0]["spec"]["replicas"] == 2  # minReplicas, then the autoscaler's to change


def range_doc(*, with_policy: bool, backend_type: str = "vLLM") -> dict[str, Any]:
    doc = load_input("range-autoscaling")
    if not with_policy:
        del doc["spec"]["autoscalingPolicy"]
        doc["spec"]["backend"]["maxReplicas"] = doc["spec"]["backend"]["minReplicas"]
    if backend_type == "vLLMDisaggregated":
        doc["spec"]["backend"]["type"] = backend_type
        doc["spec"]["backend"]["workers"] = [
            {"type": role, "image": "vllm/vllm-openai:v0.10.1", "replicas": 1, "pods": 1}
            for role in ("prefill", "decode")
        ]
    return doc


def test_without_a_policy_it_renders_as_kthena_v1s_replicas() -> None:
    ranged = range_doc(with_policy=False)
    counted = copy.deepcopy(ranged)
    backend = counted["spec"]["backend"]
    backend["replicas"] = backend.pop("minReplicas")
    del backend["maxReplicas"]
    # Byte for byte, revision digests included: the same backend whichever generation wrote it.
    assert json.dumps(children_of(ranged)) == json.dumps(children_of(counted))


@pytest.mark.parametrize("backend_type", ["vLLM", "vLLMDisaggregated"])
def test_with_a_policy_it_renders_as_a_listed_backends_own_policy(backend_type: str) -> None:
    ranged = range_doc(with_policy=True, backend_type=backend_type)
    listed = copy.deepcopy(ranged)
    listed["spec"]["backends"] = [{**listed["spec"].pop("backend"), "autoscalingPolicy": listed["spec"].pop(
        "autoscalingPolicy")}]  # fmt: skip
    single, multi = children_of(ranged), children_of(listed)
    # The route alone differs: a list's target carries its route weight, a single backend's none.
    assert [c for c in single if c["kind"] != "ModelRoute"] == [c for c in multi if c["kind"] != "ModelRoute"]
    (target,) = find(single, "ModelRoute", "phi")["spec"]["rules"][0]["targetModels"]
    assert target == {"modelServerName": "phi-gpu"}


def test_a_pd_backends_target_is_not_narrowed_to_a_leader_role() -> None:
    binding = find(children_of(range_doc(with_policy=True, backend_type="vLLMDisaggregated")),
                   "AutoscalingPolicyBinding", "phi-gpu")  # fmt: skip
    assert "additionalMatchLabels" not in binding["spec"]["scalingConfiguration"]["target"]
