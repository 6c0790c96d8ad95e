"""shared/engine_config.py against docs/design/validation.md §6 (items 4, 6) and docs/design/synthesis.md §6,
§10, §11."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1EnvVar, V1EnvVarSource, V1ObjectFieldSelector

from shared.api.modelbooster import ModelWorker
from shared.engine_config import (
    ConfigError,
    EnginePortError,
    KvConnectorError,
    config_mapping,
    config_object,
    engine_port,
    env_bool,
    env_int,
    env_str,
    find_env,
    kv_connector,
    runtime_metrics_path,
    runtime_port,
    runtime_url,
    served_model_name,
)
from shared.gotext import go_float_text, go_value_text


def w(kind: str | None = "server", config: Any = None) -> ModelWorker:
    return ModelWorker.model_validate({"type": kind, "config": config})


# --- Go text ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (128.0, "128"),
        (0.9, "0.9"),
        (32768.0, "32768"),
        (1_000_000.0, "1e+06"),
        (1_048_576.0, "1.048576e+06"),
        (0.00001, "1e-05"),
        (1.0, "1"),
        (999_999.0, "999999"),
        (0.0001, "0.0001"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
        (0.0, "0"),
    ],
)
def test_floats_print_like_go_percent_v(value: float, text: str) -> None:
    assert go_float_text(value) == text


def test_values_print_like_go_percent_v_of_decoded_json() -> None:
    assert go_value_text(None) == "<nil>"
    assert go_value_text(True) == "true"
    assert go_value_text(9000) == "9000"
    assert go_value_text("9000") == "9000"
    assert go_value_text({"b": 1, "a": [1, "x", None]}) == "map[a:[1 x <nil>] b:1]"


# --- config objects -----------------------------------------------------------------------------------------


def test_config_object() -> None:
    assert config_object(None) is None
    assert config_object({"a": 1}) == {"a": 1}
    for value, kind in (([1], "array"), ("s", "string"), (1, "number"), (True, "bool")):
        with pytest.raises(ConfigError) as caught:
            config_object(value)
        assert str(caught.value) == f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"


def test_config_mapping_reads_in_place_and_config_object_copies() -> None:
    config = {"port": 8000}
    assert config_mapping(config) is config
    copy = config_object(config)
    assert copy == config
    assert copy is not config
    assert config_mapping(None) is None
    with pytest.raises(ConfigError):
        config_mapping([1])


# --- engine port ----------------------------------------------------------------------------------------------


def test_engine_port_defaults_to_8000() -> None:
    assert engine_port([w()]) == 8000
    assert engine_port([w(config={})]) == 8000
    assert engine_port([]) == 8000
    assert engine_port([w("controller", {"port": 1})]) == 8000  # only server/prefill/decode count


def test_engine_port_from_config_number_or_string() -> None:
    assert engine_port([w("prefill", {"port": 9000}), w("decode", {"port": "9000"})]) == 9000
    assert engine_port([w(None, {"port": 9000.0})]) == 9000  # Go decodes every JSON number as a float64


def test_engine_port_errors_carry_worker_index_and_value() -> None:
    with pytest.raises(EnginePortError) as caught:
        engine_port([w("prefill", {"port": 9000}), w("coordinator"), w("decode")])
    assert (str(caught.value), caught.value.worker_index, caught.value.value) == (
        "workers use different engine ports: 9000 and 8000",
        2,
        8000,
    )
    with pytest.raises(EnginePortError) as caught:
        engine_port([w("server", {"port": None})])
    assert (str(caught.value), caught.value.worker_index, caught.value.value) == (
        'invalid port "<nil>" for worker server',
        0,
        None,
    )
    with pytest.raises(EnginePortError) as caught:
        engine_port([w("decode", [1])])
    assert str(caught.value) == (
        "failed to get port for worker decode: json: cannot unmarshal array into Go value of type "
        "map[string]interface {}"
    )


@pytest.mark.parametrize(("port", "text"), [(0, "0"), (65536, "65536"), (-1, "-1"), ("80a", "80a"), (1e6, "1e+06")])
def test_engine_port_out_of_range_or_not_an_integer(port: object, text: str) -> None:
    with pytest.raises(EnginePortError) as caught:
        engine_port([w("server", {"port": port})])
    assert str(caught.value) == f'invalid port "{text}" for worker server'


# --- KV connector ---------------------------------------------------------------------------------------------


def transfer(connector: str, role: str) -> dict[str, str]:
    return {"kv-transfer-config": f'{{"kv_connector":"{connector}","kv_role":"{role}"}}'}


@pytest.mark.parametrize(
    ("prefill", "decode", "expected"),
    [
        ("NixlConnector", "NixlConnector", "nixl"),
        ("MooncakeConnector", "MooncakeConnectorV1", "mooncake"),
        ("LMCacheConnectorV1", "LMCacheConnectorV1", "lmcache"),
    ],
)
def test_kv_connector_types(prefill: str, decode: str, expected: str) -> None:
    workers = [w("decode", transfer(decode, "kv_both")), w("prefill", transfer(prefill, "kv_producer"))]
    assert kv_connector("b", workers) == expected


def test_no_connector_is_none() -> None:
    assert kv_connector("b", [w("prefill"), w("decode", {"max-model-len": 10})]) is None
    assert kv_connector("b", [w("server", transfer("NixlConnector", "kv_both"))]) is None


def test_duplicate_prefill_workers() -> None:
    with pytest.raises(KvConnectorError) as caught:
        kv_connector("b", [w("prefill"), w("prefill"), w("decode"), w("decode")])
    assert str(caught.value) == (
        "backend b: found 2 prefill workers, expected at most 1; duplicate prefill workers are not supported"
    )


def test_duplicate_decode_workers_are_counted_after_one_prefill() -> None:
    with pytest.raises(KvConnectorError) as caught:
        kv_connector("b", [w("decode"), w("prefill"), w("server"), w("decode"), w("decode")])
    assert str(caught.value) == (
        "backend b: found 3 decode workers, expected at most 1; duplicate decode workers are not supported"
    )


def test_invalid_worker_config_in_kv_derivation() -> None:
    with pytest.raises(KvConnectorError) as caught:
        kv_connector("b", [w("prefill", "text"), w("decode")])
    assert str(caught.value) == (
        "worker prefill: invalid config: failed to unmarshal config: json: cannot unmarshal string into Go value of "
        "type map[string]interface {}"
    )


def test_kv_transfer_config_wrong_json_type_names_go_types() -> None:
    for value, go_type in ((True, "bool"), ([1], "[]interface {}"), (1.5, "float64")):
        with pytest.raises(KvConnectorError) as caught:
            kv_connector("b", [w("prefill", {"kv-transfer-config": value})])
        assert str(caught.value) == f"worker prefill: kv-transfer-config must be a JSON string, got {go_type}"


def test_kv_transfer_config_null_counts_as_absent() -> None:
    assert kv_connector("b", [w("prefill", {"kv-transfer-config": None}), w("decode")]) is None


# --- served model name -----------------------------------------------------------------------------------------


def test_served_model_name() -> None:
    assert served_model_name("m", [w()]) == "m"  # no config is fine (Q8)
    assert served_model_name("m", [w("server", {"served-model-name": "qwen"})]) == "qwen"
    assert (
        served_model_name("m", [w("prefill", {"served-model-name": "p"}), w("decode", {"served-model-name": "d"})])
        == "d"
    )
    assert served_model_name("m", [w("server", {"served-model-name": 5})]) == "m"
    assert served_model_name("m", [w("decode"), w("server", {"served-model-name": "late"})]) == "late"
    assert served_model_name("m", [w(None, {"served-model-name": "typed-by-default"})]) == "typed-by-default"


# --- env --------------------------------------------------------------------------------------------------------


def env(*pairs: tuple[str, str | None]) -> list[V1EnvVar]:
    return [V1EnvVar(name=name, value=value) for name, value in pairs]


def test_find_env_returns_the_first_match() -> None:
    entries = env(("A", "1"), ("A", "2"))
    found = find_env(entries, "A")
    assert found is not None
    assert found.value == "1"
    assert find_env(entries, "B") is None
    assert find_env(None, "A") is None


def test_typed_reads_and_defaults() -> None:
    entries = env(("P", "9100"), ("BAD", "91x"), ("SPACE", " 9"), ("T", "True"), ("F", "0"), ("U", "yes"))
    assert env_int(entries, "P", 1) == 9100
    assert env_int(entries, "BAD", 1) == 1
    assert env_int(entries, "SPACE", 1) == 1  # Go's Atoi takes no spaces
    assert env_int(entries, "MISSING", 7) == 7
    assert env_bool(entries, "T", False) is True
    assert env_bool(entries, "F", True) is False
    assert env_bool(entries, "U", True) is True  # unparsable: default
    assert env_str(entries, "P", "d") == "9100"
    assert env_str(entries, "MISSING", "d") == "d"


def test_value_from_entries_read_as_defaults() -> None:
    source = V1EnvVarSource(field_ref=V1ObjectFieldSelector(field_path="metadata.name"))
    entries = [V1EnvVar(name="RUNTIME_PORT", value_from=source)]
    assert runtime_port(entries) == 8100


def test_runtime_settings() -> None:
    assert runtime_port(None) == 8100
    assert runtime_port(env(("RUNTIME_PORT", "9999"))) == 9999
    assert runtime_url(None, port=8000) == "http://localhost:8000"
    assert runtime_url(env(("RUNTIME_URL", "http://engine:1")), port=8000) == "http://engine:1"
    assert runtime_metrics_path(None) == "/metrics"
    assert runtime_metrics_path(env(("RUNTIME_METRICS_PATH", "/m"))) == "/m"
