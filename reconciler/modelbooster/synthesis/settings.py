"""Controller settings that shape the children but are not part of any ModelBooster (docs/design/synthesis.md §14)."""

from __future__ import annotations

import marshal
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

# The images Kthena's chart configures (docs/design/synthesis.md §14); the controller's own fallbacks
# (`kthena/runtime:latest`, `kthena/downloader:latest`) name images nobody publishes.
DEFAULT_RUNTIME_IMAGE = "ghcr.io/volcano-sh/runtime:latest"
DEFAULT_DOWNLOADER_IMAGE = "ghcr.io/volcano-sh/downloader:latest"
# The engine image of an SGLang server worker that names none: the release its facts were read from
# (shared/engines/sglang/serving.py). vLLM has no such default: its workers name their image, as in Kthena.
DEFAULT_SGLANG_IMAGE = "lmsysorg/sglang:v0.5.23"


def _config_map_ref(name: str, key: str) -> dict[str, Any]:
    return {"name": key, "valueFrom": {"configMapKeyRef": {"name": name, "key": key, "optional": True}}}


# Appended to every engine and runtime container after the backend's own env (docs/design/synthesis.md §10).
# POD_NAME and NAMESPACE are not here: the runtime's `--pod $(POD_NAME).$(NAMESPACE)` needs them, so they are
# not a setting. Kthena's `VLLM_USE_V1=1` is not either: vLLM 0.33.0 knows no such variable (V1 is its only
# engine) and warns of it at start, or refuses to start under `--fail-on-environ-validation` (docs/engines.md).
DEFAULT_ENGINE_ENV: tuple[Mapping[str, Any], ...] = (
    _config_map_ref("redis-config", "REDIS_HOST"),
    _config_map_ref("redis-config", "REDIS_PORT"),
    {
        "name": "REDIS_PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "redis-secret", "key": "REDIS_PASSWORD", "optional": True}},
    },
)


@dataclass(frozen=True)
class SynthesisSettings:
    """Images and the default engine env; the chart's values reach the reconciler through these.

    `engine_env` entries are core/v1 EnvVar objects in wire form. They are copied into every object built,
    never shared, so callers may keep one settings object for the life of the process.
    """

    runtime_image: str = DEFAULT_RUNTIME_IMAGE
    downloader_image: str = DEFAULT_DOWNLOADER_IMAGE
    engine_env: tuple[Mapping[str, Any], ...] = field(default=DEFAULT_ENGINE_ENV)
    sglang_image: str = DEFAULT_SGLANG_IMAGE

    def engine_image(self, engine: str) -> str | None:
        """The image of an engine's containers when the worker names none (by engine name, e.g. `SGLang`)."""
        return {"SGLang": self.sglang_image}.get(engine)

    @cached_property
    def engine_env_blob(self) -> bytes:
        """`engine_env` frozen as marshal bytes: `marshal.loads` is the cheapest deep copy of JSON-like data,
        and every engine container needs its own copy."""
        return marshal.dumps([dict(entry) for entry in self.engine_env])
