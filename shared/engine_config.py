"""What a backend's workers say about the inference engine: config objects, engine port, KV connector,
served model name, and the backend env variables the runtime reads.

Validation and synthesis both need these answers, and must agree on them, so they live here once. The error
texts are the newer line's (docs/design/validation.md §6, items 4 and 6), which the webhook repeats verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1EnvVar

from shared.api.modelbooster import ModelWorker
from shared.constants import (
    DEFAULT_ENGINE_PORT,
    DEFAULT_RUNTIME_METRICS_PATH,
    DEFAULT_RUNTIME_PORT,
    ENV_RUNTIME_METRICS_PATH,
    ENV_RUNTIME_PORT,
    ENV_RUNTIME_URL,
)
from shared.gotext import go_parse_bool, go_type_name, go_value_text, json_kind

CONFIG_KEY_PORT: Final = "port"
CONFIG_KEY_SERVED_MODEL_NAME: Final = "served-model-name"
CONFIG_KEY_KV_TRANSFER: Final = "kv-transfer-config"

# Worker types whose containers run the engine (and so listen on the engine port).
ENGINE_WORKER_TYPES: Final = frozenset({"server", "prefill", "decode"})

# vLLM connector class -> the ModelServer `kvConnector.type` the router understands.
KV_CONNECTOR_TYPES: Final[Mapping[str, str]] = {
    "LMCacheConnectorV1": "lmcache",
    "MooncakeConnector": "mooncake",
    "MooncakeConnectorV1": "mooncake",
    "NixlConnector": "nixl",
}
KV_ROLES: Final[Mapping[str, tuple[str, ...]]] = {
    "prefill": ("kv_producer", "kv_both"),
    "decode": ("kv_consumer", "kv_both"),
}


class ConfigError(ValueError):
    """A worker's `config` is present but is not a JSON object."""


class EnginePortError(ValueError):
    """The workers do not name one valid engine port.

    `worker_index` is the offending worker and `value` the bad value the webhook reports with it.
    """

    def __init__(self, message: str, *, worker_index: int, value: object) -> None:
        super().__init__(message)
        self.worker_index = worker_index
        self.value = value


class KvConnectorError(ValueError):
    """The prefill and decode workers do not configure one supported KV connector."""


def worker_type(worker: ModelWorker) -> str:
    """A worker's type with the API default applied (`server`)."""
    return worker.type or "server"


# ---------------------------------------------------------------------------------------------------------
# Config objects


def config_mapping(config: object) -> Mapping[str, Any] | None:
    """A worker's `config` as a JSON object, to read in place; None when absent. Raise ConfigError for any
    other JSON value."""
    if config is None:
        return None
    # `type(...) is dict` first: decoded configs are plain dicts, and the ABC check costs more.
    if type(config) is dict or isinstance(config, Mapping):
        return config
    raise ConfigError(f"json: cannot unmarshal {json_kind(config)} into Go value of type map[string]interface {{}}")


def config_object(config: object) -> dict[str, Any] | None:
    """`config_mapping`, copied: a dict the caller may change."""
    mapping = config_mapping(config)
    return None if mapping is None else dict(mapping)


# ---------------------------------------------------------------------------------------------------------
# Engine port (docs/design/validation.md §6, item 4)

_GO_INT = re.compile(r"^[+-]?[0-9]+$")


def _worker_port(index: int, worker: ModelWorker, *, kind: str, default: int) -> int:
    try:
        config = config_mapping(worker.config)
    except ConfigError as error:
        raise EnginePortError(
            f"failed to get port for worker {kind}: {error}", worker_index=index, value=None
        ) from None
    if config is None or CONFIG_KEY_PORT not in config:
        return default
    raw = config[CONFIG_KEY_PORT]
    text = go_value_text(raw)
    port = int(text) if _GO_INT.match(text) else 0
    if not 1 <= port <= 65535:
        raise EnginePortError(f'invalid port "{text}" for worker {kind}', worker_index=index, value=raw)
    return port


def engine_port(workers: Sequence[ModelWorker], *, default: int = DEFAULT_ENGINE_PORT) -> int:
    """The one port the engine listens on: `config.port` of the engine workers (all equal), else the engine's
    default (vLLM's 8000 unless told otherwise)."""
    first: int | None = None
    for index, worker in enumerate(workers):
        kind = worker_type(worker)
        if kind not in ENGINE_WORKER_TYPES:
            continue
        port = _worker_port(index, worker, kind=kind, default=default)
        if first is None:
            first = port
        elif port != first:
            raise EnginePortError(
                f"workers use different engine ports: {first} and {port}", worker_index=index, value=port
            )
    return default if first is None else first


# ---------------------------------------------------------------------------------------------------------
# KV connector (docs/design/validation.md §6, item 6)


def short_json(value: Mapping[str, Any], limit: int = 120) -> str:
    """The object as compact JSON for a message, cut at `limit` characters (it is the user's, of any size)."""
    text = json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _worker_connector(kind: str, worker: ModelWorker) -> str | None:
    """The connector class a prefill/decode worker names in `kv-transfer-config`, after checking it."""
    try:
        config = config_mapping(worker.config)
    except ConfigError as error:
        raise KvConnectorError(f"worker {kind}: invalid config: failed to unmarshal config: {error}") from None
    if config is None:
        return None
    raw = config.get(CONFIG_KEY_KV_TRANSFER)
    if raw is None:
        return None
    if not isinstance(raw, str):
        message = f"worker {kind}: kv-transfer-config must be a JSON string, got {go_type_name(raw)}"
        if isinstance(raw, Mapping):  # written as a YAML map: vLLM's flag takes the object as one JSON string
            message += f"; write the object as a string: kv-transfer-config: '{short_json(raw)}'"
        raise KvConnectorError(message)
    try:
        transfer = config_mapping(json.loads(raw))
    except json.JSONDecodeError as error:
        raise KvConnectorError(
            f"worker {kind}: invalid kv-transfer-config: failed to unmarshal config: {error.msg}"
        ) from None
    except ConfigError as error:
        raise KvConnectorError(
            f"worker {kind}: invalid kv-transfer-config: failed to unmarshal config: {error}"
        ) from None
    transfer = transfer or {}
    connector = transfer.get("kv_connector")
    if not isinstance(connector, str) or not connector:
        raise KvConnectorError(f"worker {kind}: kv-transfer-config is set but kv_connector is missing")
    if connector not in KV_CONNECTOR_TYPES:
        supported = ", ".join(sorted(KV_CONNECTOR_TYPES))
        raise KvConnectorError(f'worker {kind}: unsupported kv_connector "{connector}" (supported: {supported})')
    role = transfer.get("kv_role")
    if not isinstance(role, str) or not role:
        raise KvConnectorError(f"worker {kind}: kv-transfer-config is set but kv_role is missing")
    allowed = KV_ROLES[kind]
    if role not in allowed:
        raise KvConnectorError(f'worker {kind}: invalid kv_role "{role}", expected one of [{", ".join(allowed)}]')
    return connector


def kv_connector(backend_name: str, workers: Sequence[ModelWorker]) -> str | None:
    """The ModelServer `kvConnector.type` of a backend (`nixl`, `mooncake`, `lmcache`), or None when the
    prefill and decode workers configure no connector. Raise KvConnectorError when they disagree."""
    by_kind: dict[str, list[ModelWorker]] = {}
    for worker in workers:  # one pass: most backends have neither kind
        if worker.type is not None and worker.type in KV_ROLES:
            by_kind.setdefault(worker.type, []).append(worker)
    if not by_kind:  # no prefill or decode worker, so no connector to configure
        return None
    for kind in ("prefill", "decode"):
        count = len(by_kind.get(kind, ()))
        if count > 1:
            raise KvConnectorError(
                f"backend {backend_name}: found {count} {kind} workers, expected at most 1; "
                f"duplicate {kind} workers are not supported"
            )
    prefill = _worker_connector("prefill", by_kind["prefill"][0]) if "prefill" in by_kind else None
    decode = _worker_connector("decode", by_kind["decode"][0]) if "decode" in by_kind else None
    if prefill is None and decode is None:
        return None
    if prefill is None:
        raise KvConnectorError(
            f'backend {backend_name}: decode worker specifies kv_connector "{decode}" but the prefill worker has no '
            "kv-transfer-config; prefill and decode must configure the same kv connector"
        )
    if decode is None:
        raise KvConnectorError(
            f'backend {backend_name}: prefill worker specifies kv_connector "{prefill}" but the decode worker has no '
            "kv-transfer-config; prefill and decode must configure the same kv connector"
        )
    if KV_CONNECTOR_TYPES[prefill] != KV_CONNECTOR_TYPES[decode]:
        raise KvConnectorError(
            f'backend {backend_name}: kv_connector mismatch between prefill ("{prefill}") and decode ("{decode}") '
            "workers; prefill and decode must use the same kv connector"
        )
    return KV_CONNECTOR_TYPES[prefill]


# ---------------------------------------------------------------------------------------------------------
# Served model name (docs/design/synthesis.md §11, with Q8 fixed)


def served_model_name(model_name: str, workers: Iterable[ModelWorker]) -> str:
    """The name clients send in requests: the first `served-model-name` string of a server or decode worker.

    Unlike the reference, a worker without a config (or with one that is not an object, which validation
    rejects anyway) is skipped instead of ending the search; an empty name is treated as unset.
    """
    for worker in workers:
        if worker_type(worker) not in ("server", "decode"):
            continue
        try:
            config = config_mapping(worker.config)
        except ConfigError:
            continue
        name = (config or {}).get(CONFIG_KEY_SERVED_MODEL_NAME)
        if isinstance(name, str) and name:
            return name
    return model_name


# ---------------------------------------------------------------------------------------------------------
# Backend env (docs/design/synthesis.md §6, §10)


def find_env(env: Sequence[V1EnvVar] | None, name: str) -> V1EnvVar | None:
    """The first entry with this name (the list may hold duplicates when validation was bypassed)."""
    for entry in env or ():
        if entry.name == name:
            return entry
    return None


def env_str(env: Sequence[V1EnvVar] | None, name: str, default: str) -> str:
    """A literal string value; the default when absent, empty, or given by `valueFrom`."""
    entry = find_env(env, name)
    return entry.value if entry is not None and entry.value else default


def env_int(env: Sequence[V1EnvVar] | None, name: str, default: int) -> int:
    """A base-10 integer value (Go `strconv.Atoi`); the default when absent or not an integer."""
    text = env_str(env, name, "")
    return int(text) if _GO_INT.match(text) else default


def env_bool(env: Sequence[V1EnvVar] | None, name: str, default: bool) -> bool:
    """A boolean value parsed like Go's `strconv.ParseBool`; the default when absent or unparsable."""
    parsed = go_parse_bool(env_str(env, name, ""))
    return default if parsed is None else parsed


def runtime_port(env: Sequence[V1EnvVar] | None) -> int:
    return env_int(env, ENV_RUNTIME_PORT, DEFAULT_RUNTIME_PORT)


def runtime_url(env: Sequence[V1EnvVar] | None, *, port: int) -> str:
    """Where the runtime sidecar reaches the engine; defaults to the engine port on localhost."""
    return env_str(env, ENV_RUNTIME_URL, f"http://localhost:{port}")


def runtime_metrics_path(env: Sequence[V1EnvVar] | None) -> str:
    return env_str(env, ENV_RUNTIME_METRICS_PATH, DEFAULT_RUNTIME_METRICS_PATH)
