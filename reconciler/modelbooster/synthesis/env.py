"""Environment of the generated containers (docs/design/synthesis.md §10).

Every call returns fresh objects: the same env block appears in several containers, and shared objects
would surface as YAML anchors in `modelbooster render` and as aliasing bugs in any caller that edits one.
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from typing import Any

from kubernetes.client import V1EnvFromSource, V1EnvVar

from reconciler.modelbooster.synthesis.settings import SynthesisSettings
from shared.api.base import wire_form
from shared.engine_config import find_env

# Passed to the model downloader only when set to a literal value (docs/design/synthesis.md §10).
DOWNLOADER_ENV_NAMES = ("ENDPOINT", "HF_ENDPOINT", "MS_TOKEN", "MS_REVISION")


def _field_ref(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def wire_env(env: Sequence[V1EnvVar] | None) -> list[dict[str, Any]]:
    return [wire_form(entry) for entry in env or ()]


def wire_env_from(env_from: Sequence[V1EnvFromSource] | None) -> list[dict[str, Any]]:
    return [wire_form(entry) for entry in env_from or ()]


def engine_env(env: Sequence[V1EnvVar] | None, *, settings: SynthesisSettings) -> list[dict[str, Any]]:
    """The backend's env, then POD_NAME, NAMESPACE and the settings' defaults.

    A default the backend already sets is left out: Kubernetes gives the last duplicate precedence, so the
    reference's blind append silently overrode a user's own `VLLM_USE_V1`.
    """
    own = wire_env(env)
    taken = {entry["name"] for entry in own}
    defaults = [
        _field_ref("POD_NAME", "metadata.name"),
        _field_ref("NAMESPACE", "metadata.namespace"),
        *marshal.loads(settings.engine_env_blob),
    ]
    return own + [entry for entry in defaults if entry["name"] not in taken]


def with_extra(base: list[dict[str, Any]], extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Role-specific variables (PD) after the standard block, unless the backend already sets them."""
    taken = {entry["name"] for entry in base}
    return base + [entry for entry in extra if entry["name"] not in taken]


def prefill_extra_env() -> list[dict[str, Any]]:
    return [{"name": "HF_HUB_OFFLINE", "value": "1"}, _field_ref("HCCL_IF_IP", "status.podIP")]


def decode_extra_env() -> list[dict[str, Any]]:
    return [
        {"name": "HF_HUB_OFFLINE", "value": "1"},
        {"name": "GLOO_SOCKET_IFNAME", "value": "eth0"},
        {"name": "TP_SOCKET_IFNAME", "value": "eth0"},
        {"name": "HCCL_SOCKET_IFNAME", "value": "eth0"},
    ]


def downloader_env(env: Sequence[V1EnvVar] | None) -> list[dict[str, Any]]:
    """ENDPOINT, HF_ENDPOINT, MS_TOKEN, MS_REVISION, in that order, when the backend sets them literally."""
    entries = [find_env(env, name) for name in DOWNLOADER_ENV_NAMES]
    return [{"name": entry.name, "value": entry.value} for entry in entries if entry is not None and entry.value]
