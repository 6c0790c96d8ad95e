"""Rules about a backend as a whole: its type, its env's quantities, its engine's port and KV connector, and the
names that must not repeat (docs/design/validation.md §3, §6).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from shared.api.modelbooster import SUPPORTED_BACKEND_TYPES, ModelBackend
from shared.engine_config import (
    CONFIG_KEY_KV_TRANSFER,
    ConfigError,
    EnginePortError,
    KvConnectorError,
    config_mapping,
    engine_port,
    kv_connector,
    short_json,
    worker_type,
)
from shared.errors import FieldError, duplicate, invalid
from shared.quantity import PATTERN_MESSAGE, check_quantity, pattern_message
from shared.validation.reads import backend_fields, reads

_ENGINE_PORT_TYPES: Final = ("vLLM", "vLLMDisaggregated", "SGLang")


def env_quantities(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    """The `resourceFieldRef.divisor` quantities of each backend's env, checked as Kubernetes checks them."""
    for i, backend in enumerate(backends):
        for j, entry in enumerate(backend.env or ()):
            value_from = entry.value_from  # a property of the client's model: read once
            selector = value_from.resource_field_ref if value_from else None
            if selector is None or selector.divisor is None:
                continue
            try:
                check_quantity(selector.divisor)
            except ValueError as error:
                path = f"spec.backends[{i}].env[{j}].valueFrom.resourceFieldRef.divisor"
                reason = pattern_message(selector.divisor) if str(error) == PATTERN_MESSAGE else str(error)
                yield invalid(path, selector.divisor, reason)


def backend_types(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        if backend.type not in SUPPORTED_BACKEND_TYPES:
            yield invalid(
                f"spec.backends[{i}].type",
                backend.type,
                "not supported yet; supported: " + ", ".join(SUPPORTED_BACKEND_TYPES),
            )


def engine_ports(backends: Sequence[ModelBackend], *, configs_ok: Sequence[bool]) -> Iterator[FieldError]:
    """The one port a backend's engine workers listen on (their `config.port`, all equal), for the types that
    set it; read only where every worker's config is a JSON object."""
    for i, backend in enumerate(backends):
        if configs_ok[i] and backend.type in _ENGINE_PORT_TYPES:
            try:
                engine_port(backend.workers)
            except EnginePortError as port_error:
                path = f"spec.backends[{i}].workers[{port_error.worker_index}].config.port"
                error = invalid(path, port_error.value, str(port_error))
                yield reads(error, *backend_fields(i, "workers", "type"))


def kv_connectors(backends: Sequence[ModelBackend], *, readable: Sequence[bool]) -> Iterator[FieldError]:
    """The KV connector of each backend whose workers are `readable` (their configs and their prefill/decode
    pair are valid)."""
    for i, backend in enumerate(backends):
        written_as_map = list(_kv_transfer_maps(i, backend))
        yield from written_as_map
        if readable[i] and not written_as_map:
            try:
                kv_connector(backend.name, backend.workers)
            except KvConnectorError as kv_error:
                yield invalid(
                    f"spec.backends[{i}].workers", backend.name, f"invalid kv connector configuration: {kv_error}"
                )


def _kv_transfer_maps(index: int, backend: ModelBackend) -> Iterator[FieldError]:
    """A prefill/decode worker's `kv-transfer-config` written as a YAML map, at its own path: vLLM's flag takes the
    object as one JSON string (the reference said `got map[string]interface {}` at `workers`)."""
    for j, worker in enumerate(backend.workers):
        if worker_type(worker) not in ("prefill", "decode"):
            continue
        try:
            config = config_mapping(worker.config)
        except ConfigError:
            continue  # said by the config rule
        raw = (config or {}).get(CONFIG_KEY_KV_TRANSFER)
        if isinstance(raw, Mapping):
            yield invalid(
                f"spec.backends[{index}].workers[{j}].config.{CONFIG_KEY_KV_TRANSFER}",
                "object",
                f"must be a JSON string, not a map; write it as {CONFIG_KEY_KV_TRANSFER}: '{short_json(raw)}'",
            )


def duplicates(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    # Each error reads the name it repeats too: both are the user's, or neither is reported (partial_decode.py).
    seen_backends: dict[str, int] = {}
    for i, backend in enumerate(backends):
        first = seen_backends.setdefault(backend.name, i)
        if first != i:
            path = f"spec.backends[{i}].name"
            yield reads(duplicate(path, backend.name), path, f"spec.backends[{first}].name")
    for i, backend in enumerate(backends):
        seen_env: dict[str, int] = {}
        for j, entry in enumerate(backend.env or ()):
            name = entry.name  # a property of the client's model: read once
            first = seen_env.setdefault(name, j)
            if first != j:
                path = f"spec.backends[{i}].env[{j}].name"
                yield reads(duplicate(path, name), path, f"spec.backends[{i}].env[{first}].name")
