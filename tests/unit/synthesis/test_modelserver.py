"""ModelServer rules (docs/design/synthesis.md §11, Q8 and Q9 fixed)."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.modelbooster.synthesis import SynthesisError, synthesize
from shared.api.modelbooster import ModelBooster
from tests.unit.synthesis.support import UID, find, render, server_worker, vllm_doc


def _server(doc: dict[str, Any]) -> dict[str, Any]:
    return find(render(doc), "ModelServer", "m-b")


def _transfer(connector: str, role: str) -> str:
    return f'{{"kv_connector":"{connector}","kv_role":"{role}"}}'


def _pd(prefill_config: Any, decode_config: Any) -> dict[str, Any]:
    return vllm_doc(
        type="vLLMDisaggregated",
        workers=[
            {"type": "prefill", "replicas": 1, "pods": 1, "config": prefill_config},
            {"type": "decode", "replicas": 1, "pods": 1, "config": decode_config},
        ],
    )


def test_a_server_without_config_serves_under_the_model_name() -> None:
    # Q8: the reference failed with "failed to unmarshal config: unexpected end of JSON input".
    spec = _server(vllm_doc(workers=[server_worker()]))["spec"]
    assert spec["model"] == "m"
    assert spec["workloadPort"] == {"port": 8000}
    assert "kvConnector" not in spec


def test_served_model_name_is_the_first_server_or_decode_name() -> None:
    workers = [
        {"type": "controller", "config": {"served-model-name": "not-me"}},
        server_worker(),
        server_worker(config={"served-model-name": "first"}),
        server_worker(config={"served-model-name": "second"}),
    ]
    assert _server(vllm_doc(workers=workers))["spec"]["model"] == "first"


def test_selector_is_model_uid_and_backend_name() -> None:
    # Q9: the uid alone matched the pods of every backend of the model.
    selector = _server(vllm_doc())["spec"]["workloadSelector"]
    assert selector == {
        "matchLabels": {
            "workload.serving.volcano.sh/model-uid": UID,
            "workload.serving.volcano.sh/backend-name": "b",
        }
    }


def test_the_selector_matches_the_entry_pod_labels() -> None:
    children = render(vllm_doc(workers=[server_worker(pods=2)]))
    selector = children[1]["spec"]["workloadSelector"]["matchLabels"]
    role = children[0]["spec"]["template"]["roles"][0]
    entry_labels = role["entryTemplate"]["metadata"]["labels"]
    worker_labels = role["workerTemplate"]["metadata"]["labels"]
    assert selector.items() <= entry_labels.items()
    # Ray workers serve no HTTP, so the router must not pick them.
    assert not selector.items() <= worker_labels.items()


@pytest.mark.parametrize(
    ("prefill", "decode", "expected"),
    [
        ("MooncakeConnectorV1", "MooncakeConnector", "mooncake"),
        ("LMCacheConnectorV1", "LMCacheConnectorV1", "lmcache"),
        ("NixlConnector", "NixlConnector", "nixl"),
    ],
)
def test_kv_connector_type_from_the_transfer_config(prefill: str, decode: str, expected: str) -> None:
    doc = _pd(
        {"kv-transfer-config": _transfer(prefill, "kv_producer")},
        {"kv-transfer-config": _transfer(decode, "kv_both")},
    )
    assert _server(doc)["spec"]["kvConnector"] == {"type": expected}


def test_pd_without_transfer_config_has_no_connector() -> None:
    assert "kvConnector" not in _server(_pd(None, {"served-model-name": "x"}))["spec"]


def test_mismatched_connectors_cannot_be_synthesized() -> None:
    doc = _pd(
        {"kv-transfer-config": _transfer("NixlConnector", "kv_producer")},
        {"kv-transfer-config": _transfer("LMCacheConnectorV1", "kv_consumer")},
    )
    with pytest.raises(SynthesisError) as caught:
        synthesize(ModelBooster.model_validate(doc))
    assert str(caught.value) == (
        'backend b: kv_connector mismatch between prefill ("NixlConnector") and decode ("LMCacheConnectorV1") '
        "workers; prefill and decode must use the same kv connector"
    )


def test_pd_group_splits_prefill_and_decode_pods() -> None:
    selector = _server(_pd(None, None))["spec"]["workloadSelector"]
    assert selector["pdGroup"] == {
        "groupKey": "modelserving.volcano.sh/group-name",
        "prefillLabels": {"modelserving.volcano.sh/role": "prefill"},
        "decodeLabels": {"modelserving.volcano.sh/role": "decode"},
    }
