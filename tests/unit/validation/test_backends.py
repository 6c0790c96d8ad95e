"""docs/design/validation.md §6: backend types, engine ports, KV connectors, duplicate names, env quantities.

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.factories import backend, modelbooster, pd_workers, worker
from tests.unit.validation.support import lines


@pytest.mark.parametrize("kind", ["MindIE"])
def test_backend_types_we_cannot_synthesize_are_rejected(kind: str) -> None:
    assert lines(modelbooster(backend(type=kind))) == [
        f'spec.backends[0].type: Invalid value: "{kind}": not supported yet; supported: vLLM, vLLMDisaggregated, SGLang'
    ]


def test_workers_must_agree_on_the_engine_port() -> None:
    obj = modelbooster(backend(type="vLLMDisaggregated", workers=pd_workers(prefill={"config": {"port": 9000}})))
    assert lines(obj) == [
        "spec.backends[0].workers[1].config.port: Invalid value: 8000: "
        "workers use different engine ports: 9000 and 8000"
    ]


def test_agreeing_ports_given_as_number_and_string_pass() -> None:
    workers = pd_workers(prefill={"config": {"port": 9000}}, decode={"config": {"port": "9000"}})
    assert lines(modelbooster(backend(type="vLLMDisaggregated", workers=workers))) == []


@pytest.mark.parametrize(
    ("port", "value", "text"),
    [
        (None, "null", "<nil>"),
        (0, "0", "0"),
        (65536, "65536", "65536"),
        ("http", '"http"', "http"),
        (1e6, "1000000", "1e+06"),
        (80.5, "80.5", "80.5"),
    ],
)
def test_invalid_engine_ports_are_rejected(port: object, value: str, text: str) -> None:
    assert lines(modelbooster(backend(workers=[worker(config={"port": port})]))) == [
        f'spec.backends[0].workers[0].config.port: Invalid value: {value}: invalid port "{text}" for worker server'
    ]


def test_valid_engine_port_passes() -> None:
    assert lines(modelbooster(backend(workers=[worker(config={"port": 65535})]))) == []


def kv(connector: str, role: str) -> dict[str, str]:
    return {"kv-transfer-config": f'{{"kv_connector": "{connector}", "kv_role": "{role}"}}'}


def pd(prefill: dict[str, Any] | None, decode: dict[str, Any] | None) -> dict[str, Any]:
    workers = pd_workers(
        prefill={"config": prefill} if prefill is not None else None,
        decode={"config": decode} if decode is not None else None,
    )
    return modelbooster(backend("pd", type="vLLMDisaggregated", workers=workers))


KV_PREFIX = 'spec.backends[0].workers: Invalid value: "pd": invalid kv connector configuration: '


def test_matching_kv_connectors_pass_including_mooncake_and_its_v1() -> None:
    assert lines(pd(kv("NixlConnector", "kv_producer"), kv("NixlConnector", "kv_consumer"))) == []
    assert lines(pd(kv("MooncakeConnector", "kv_both"), kv("MooncakeConnectorV1", "kv_both"))) == []
    assert lines(pd(None, None)) == []


@pytest.mark.parametrize(
    ("prefill", "decode", "detail"),
    [
        (
            kv("NixlConnector", "kv_producer"),
            kv("LMCacheConnectorV1", "kv_consumer"),
            'backend pd: kv_connector mismatch between prefill ("NixlConnector") and decode ("LMCacheConnectorV1") '
            "workers; prefill and decode must use the same kv connector",
        ),
        (
            kv("NixlConnector", "kv_producer"),
            None,
            'backend pd: prefill worker specifies kv_connector "NixlConnector" but the decode worker has no '
            "kv-transfer-config; prefill and decode must configure the same kv connector",
        ),
        (
            {},
            kv("NixlConnector", "kv_consumer"),
            'backend pd: decode worker specifies kv_connector "NixlConnector" but the prefill worker has no '
            "kv-transfer-config; prefill and decode must configure the same kv connector",
        ),
        (
            kv("P2pNcclConnector", "kv_producer"),
            None,
            'worker prefill: unsupported kv_connector "P2pNcclConnector" (supported: LMCacheConnectorV1, '
            "MooncakeConnector, MooncakeConnectorV1, NixlConnector)",
        ),
        (
            kv("NixlConnector", "kv_consumer"),
            None,
            'worker prefill: invalid kv_role "kv_consumer", expected one of [kv_producer, kv_both]',
        ),
        (
            kv("NixlConnector", "kv_producer"),
            kv("NixlConnector", "kv_producer"),
            'worker decode: invalid kv_role "kv_producer", expected one of [kv_consumer, kv_both]',
        ),
        ({"kv-transfer-config": 5}, None, "worker prefill: kv-transfer-config must be a JSON string, got float64"),
        (
            {"kv-transfer-config": '{"kv_role": "kv_both"}'},
            None,
            "worker prefill: kv-transfer-config is set but kv_connector is missing",
        ),
        (
            {"kv-transfer-config": '{"kv_connector": "NixlConnector"}'},
            None,
            "worker prefill: kv-transfer-config is set but kv_role is missing",
        ),
        (
            {"kv-transfer-config": "[1]"},
            None,
            "worker prefill: invalid kv-transfer-config: failed to unmarshal config: json: cannot unmarshal array "
            "into Go value of type map[string]interface {}",
        ),
    ],
)
def test_kv_connector_errors(prefill: dict[str, Any] | None, decode: dict[str, Any] | None, detail: str) -> None:
    assert lines(pd(prefill, decode)) == [KV_PREFIX + detail]


def test_kv_transfer_config_written_as_a_map_is_reported_at_its_own_key_with_the_string_to_write() -> None:
    """Not at `workers` with the backend's name and a Go type (the reference's `got map[string]interface {}`): at
    the key, for each worker that wrote it so, and nothing else about the connector until it is a string."""
    obj = pd({"kv-transfer-config": {"kv_connector": "NixlConnector"}},
             {"kv-transfer-config": {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}})  # fmt: skip
    assert lines(obj) == [
        'spec.backends[0].workers[0].config.kv-transfer-config: Invalid value: "object": must be a JSON string, not '
        "a map; write it as kv-transfer-config: '{\"kv_connector\":\"NixlConnector\"}'",
        'spec.backends[0].workers[1].config.kv-transfer-config: Invalid value: "object": must be a JSON string, not '
        "a map; write it as kv-transfer-config: '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}'",
    ]


def test_kv_transfer_config_that_is_not_json_names_the_parse_problem() -> None:
    (line,) = lines(pd({"kv-transfer-config": "{not json"}, None))
    assert line.startswith(KV_PREFIX + "worker prefill: invalid kv-transfer-config: failed to unmarshal config: ")


def test_duplicate_env_names_are_rejected() -> None:
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}]
    assert lines(modelbooster(backend(env=env))) == ['spec.backends[0].env[2].name: Duplicate value: "A"']


def test_duplicate_backend_names_are_rejected() -> None:
    assert lines(modelbooster(backend("a"), backend("a"))) == ['spec.backends[1].name: Duplicate value: "a"']


def test_divisor_of_a_resource_field_ref_is_a_quantity() -> None:
    def env(divisor: object) -> list[dict[str, Any]]:
        return [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": divisor}}}]

    assert lines(modelbooster(backend(env=env(1)))) == []
    assert lines(modelbooster(backend(env=env("1m")))) == []
    (line,) = lines(modelbooster(backend(env=env("one"))))
    assert line.startswith('spec.backends[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "one": ')
