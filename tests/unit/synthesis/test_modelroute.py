"""ModelRoute rules (docs/design/synthesis.md §12)."""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.synthesis.support import find, render, vllm_doc


def _route(doc: dict[str, Any]) -> dict[str, Any]:
    return find(render(doc), "ModelRoute", "m")


def _two_backends(**spec: Any) -> dict[str, Any]:
    doc = vllm_doc()
    second = copy.deepcopy(doc["spec"]["backends"][0])
    second["name"] = "c"
    second["routeWeight"] = 0
    doc["spec"]["backends"].append(second)
    doc["spec"].update(spec)
    return doc


def test_one_backend_with_lora_lists_adapters_but_keeps_one_rule() -> None:
    lora = [{"name": "b-adapter", "artifactURL": "hf://x/b"}, {"name": "a-adapter", "artifactURL": "hf://x/a"}]
    spec = _route(vllm_doc(loraAdapters=lora))["spec"]
    assert spec == {
        "modelName": "m",
        "loraAdapters": ["a-adapter", "b-adapter"],
        "rules": [{"name": "default", "targetModels": [{"modelServerName": "m-b", "weight": 100}]}],
    }


def test_an_unset_weight_is_left_to_the_crd_default() -> None:
    doc = vllm_doc()
    del doc["spec"]["backends"][0]["routeWeight"]
    assert _route(doc)["spec"]["rules"][0]["targetModels"] == [{"modelServerName": "m-b"}]


def test_several_backends_match_the_model_name_in_the_body_overriding_the_user() -> None:
    doc = _two_backends(modelMatch={"body": {"model": "user-value"}, "uri": {"prefix": "/v1"}})
    rules = _route(doc)["spec"]["rules"]
    assert rules == [
        {
            "name": "default",
            "modelMatch": {"uri": {"prefix": "/v1"}, "body": {"model": "m"}},
            "targetModels": [{"modelServerName": "m-b", "weight": 100}, {"modelServerName": "m-c", "weight": 0}],
        }
    ]


def test_several_backends_without_a_match_still_match_the_body_model() -> None:
    rules = _route(_two_backends())["spec"]["rules"]
    assert rules[0]["modelMatch"] == {"body": {"model": "m"}}


def test_no_lora_means_no_lora_adapters_field() -> None:
    assert "loraAdapters" not in _route(_two_backends())["spec"]


def test_spec_name_is_the_model_name_clients_send_with_one_backend() -> None:
    doc = vllm_doc()
    doc["spec"]["name"] = "chat"
    spec = _route(doc)["spec"]
    assert spec["modelName"] == "chat"
    assert spec["rules"] == [{"name": "default", "targetModels": [{"modelServerName": "m-b", "weight": 100}]}]


def test_spec_name_is_matched_in_the_body_across_several_backends() -> None:
    lora = [{"name": "sql", "artifactURL": "hf://x/sql"}]
    doc = _two_backends(name="chat")
    doc["spec"]["backends"][0]["loraAdapters"] = lora
    spec = _route(doc)["spec"]
    assert spec["modelName"] == "chat"
    assert [rule["modelMatch"] for rule in spec["rules"]] == [{"body": {"model": "chat"}}, {"body": {"model": "sql"}}]
