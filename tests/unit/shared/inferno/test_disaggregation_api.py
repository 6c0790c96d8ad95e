"""Server.spec.disaggregation and the status of its roles (shared/api/inferno.py): shape, defaults, and bad input
named by field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shared.api.inferno import Server
from shared.inferno_validation import InfernoObjectError, parse_inferno_object


def server(**disaggregation: Any) -> dict[str, Any]:
    spec = {"prefill": {"maxReplicas": 8}, "decode": {"maxReplicas": 8}, **disaggregation}
    return {
        "apiVersion": "inferno.platform.ai/v1alpha1",
        "kind": "Server",
        "metadata": {"name": "s", "namespace": "n"},
        "spec": {
            "name": "s", "class": "c", "model": "m", "actuation": "Scale",
            "targetRef": {"kind": "ModelServing", "name": "m-pd"}, "disaggregation": spec,
        },
    }  # fmt: skip


def refusal(obj: dict[str, Any]) -> str:
    with pytest.raises(InfernoObjectError) as caught:
        parse_inferno_object(obj)
    return str(caught.value)


def test_defaults_name_the_roles_kthena_renders_and_the_wide_band() -> None:
    parsed = parse_inferno_object(server())
    assert isinstance(parsed, Server)
    pd = parsed.spec.disaggregation
    assert pd is not None
    assert (pd.prefill_role, pd.decode_role, pd.ratio_bounds) == ("prefill", "decode", (0.1, 10.0))
    assert (pd.prefill.floor, pd.decode.floor) == (1, 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"minRatio": 5, "maxRatio": 4}, "spec.disaggregation: minRatio (5) must not exceed maxRatio (4)"),
        ({"prefill": {"name": "decode", "maxReplicas": 2}}, "prefill.name and decode.name must name two roles"),
        ({"prefill": {"minReplicas": 3, "maxReplicas": 2}}, "spec.disaggregation.prefill: minReplicas (3) must not"),
        ({"prefill": {"minReplicas": 9, "maxReplicas": 9}, "decode": {"maxReplicas": 2}, "maxRatio": 4},
         "prefill.minReplicas (9) over decode.maxReplicas (2) exceeds maxRatio (4)"),
        ({"prefill": {"maxReplicas": 1}, "decode": {"minReplicas": 8, "maxReplicas": 8}, "minRatio": 0.5},
         "prefill.maxReplicas (1) over decode.minReplicas (8) is below minRatio (0.5)"),
        ({"maxRatio": 0}, "spec.disaggregation.maxRatio: Input should be greater than 0"),
        ({"prefillTokensPerSecond": -1}, "spec.disaggregation.prefillTokensPerSecond"),
        ({"decode": {"name": "Decode_1", "maxReplicas": 2}}, "spec.disaggregation.decode.name"),
        ({"decode": {}}, "spec.disaggregation.decode.maxReplicas"),
    ],
)
def test_bad_input_is_named_by_field(change: dict[str, Any], message: str) -> None:
    assert message in refusal(server(**change))


def test_disaggregation_needs_a_model_serving_target() -> None:
    obj = copy.deepcopy(server())
    obj["spec"]["targetRef"] = {"kind": "Deployment", "name": "d"}
    assert "disaggregation needs targetRef naming the ModelServing" in refusal(obj)
    del obj["spec"]["targetRef"]
    assert "disaggregation needs targetRef naming the ModelServing" in refusal(obj)


def test_the_status_of_the_roles_round_trips() -> None:
    obj = server()
    obj["status"] = {
        "roles": [
            {"name": "prefill", "side": "prefill", "replicas": 4, "need": 4, "promptTokensPerSecond": 39800.5},
            {"name": "decode", "side": "decode", "replicas": 1, "need": 1, "kvCacheUsage": 0.2, "pressure": 0.3},
        ],
        "ratio": 4.0,
    }
    parsed = parse_inferno_object(obj)
    assert isinstance(parsed, Server)
    assert parsed.status is not None
    assert parsed.status.model_dump(by_alias=True, exclude_none=True)["roles"] == obj["status"]["roles"]
