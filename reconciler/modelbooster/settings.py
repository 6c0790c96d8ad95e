"""Reconciler settings: command-line flags, their environment variables, and the watched settings ConfigMap.

Precedence, highest first: a key in the settings ConfigMap (read at start-up and watched, so a change
re-renders children without a restart), the command-line flag, its `MODELBOOSTER_*` environment variable,
the built-in default. Only the settings that shape children (images, default engine env) live in the
ConfigMap; process settings (workers, namespaces, leader election, ...) are fixed for the life of the process.

ConfigMap keys (the first two are Kthena's `model-booster-controller-config` keys, so an existing override
keeps working): `model_serving_runtime_image`, `model_serving_downloader_image`, `engine_env.json` (a JSON list
of core/v1 EnvVar objects appended to every engine and runtime container).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reconciler.modelbooster.synthesis import DEFAULT_DOWNLOADER_IMAGE, DEFAULT_RUNTIME_IMAGE, SynthesisSettings
from reconciler.runtime.environment import SettingsError, detect_identity
from reconciler.runtime.leader import LeaseTimings

logger = logging.getLogger(__name__)

KEY_RUNTIME_IMAGE = "model_serving_runtime_image"
KEY_DOWNLOADER_IMAGE = "model_serving_downloader_image"
KEY_ENGINE_ENV = "engine_env.json"


@dataclass(frozen=True)
class ReconcilerSettings:
    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    workers: int = 5
    qps: float = 0.0  # client-side limit; 0 = none (rely on API Priority and Fairness, as controller-runtime)
    burst: int = 0
    runtime_image: str = DEFAULT_RUNTIME_IMAGE
    downloader_image: str = DEFAULT_DOWNLOADER_IMAGE
    config_map: str | None = None
    controller_namespace: str = "default"
    leader_elect: bool = True
    lease_name: str = "modelbooster-reconciler"
    lease_namespace: str | None = None
    identity: str = field(default_factory=detect_identity)
    lease: LeaseTimings = field(default_factory=LeaseTimings)
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 8080
    log_level: str = "info"
    log_format: str = "text"
    field_manager: str = "modelbooster"
    resync_period: float = 600.0
    watch_timeout: int = 300
    watch_read_timeout: float | None = None  # None: watch_timeout + 30 s
    backoff_base: float = 0.005
    backoff_max: float = 1000.0
    retry_qps: float = 10.0
    retry_burst: int = 100
    lora_timeout: float = 300.0
    shutdown_timeout: float = 25.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise SettingsError(f"--workers must be at least 1, got {self.workers}")
        if self.qps < 0 or self.burst < 0:
            raise SettingsError(f"--qps and --burst must not be negative, got {self.qps} and {self.burst}")
        if self.qps > 0 and self.burst < 1:
            raise SettingsError(f"--burst must be at least 1 when --qps is set, got {self.burst}")
        if not 0 <= self.metrics_port <= 65535:
            raise SettingsError(f"--metrics-port must be 0..65535, got {self.metrics_port}")
        if not self.field_manager or len(self.field_manager) > 128 or not self.field_manager.isprintable():
            raise SettingsError("--field-manager must be 1..128 printable characters")
        if self.log_format not in ("text", "json"):
            raise SettingsError(f"--log-format must be text or json, got {self.log_format!r}")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise SettingsError(f"--log-level must be debug, info, warning or error, got {self.log_level!r}")
        for namespace in self.namespaces:
            if not namespace:
                raise SettingsError("--namespaces must not contain empty names")

    @property
    def effective_lease_namespace(self) -> str:
        return self.lease_namespace or self.controller_namespace

    def synthesis(self) -> SynthesisSettings:
        return SynthesisSettings(runtime_image=self.runtime_image, downloader_image=self.downloader_image)


def parse_engine_env(text: str) -> tuple[Mapping[str, Any], ...]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise SettingsError(f"{KEY_ENGINE_ENV}: not JSON: {error}") from error
    if not isinstance(value, list):
        raise SettingsError(f"{KEY_ENGINE_ENV}: must be a JSON list of EnvVar objects")
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise SettingsError(f"{KEY_ENGINE_ENV}[{index}]: must be an EnvVar object with a non-empty name")
    return tuple(value)


class DynamicSettings:
    """The synthesis settings in force: start-up values overlaid by the settings ConfigMap, when it exists."""

    def __init__(self, base: SynthesisSettings) -> None:
        self._base = base
        self.current = base
        self.error: str | None = None

    def update(self, data: Mapping[str, str] | None) -> bool:
        """Apply a ConfigMap's data (None: the ConfigMap is absent); return whether the settings changed.

        A bad value keeps the previous settings and is reported in `error` (and the log) instead of breaking
        every ModelBooster."""
        data = data or {}
        new = self._base
        try:
            if data.get(KEY_RUNTIME_IMAGE):
                new = replace(new, runtime_image=data[KEY_RUNTIME_IMAGE].strip())
            if data.get(KEY_DOWNLOADER_IMAGE):
                new = replace(new, downloader_image=data[KEY_DOWNLOADER_IMAGE].strip())
            if data.get(KEY_ENGINE_ENV):
                new = replace(new, engine_env=parse_engine_env(data[KEY_ENGINE_ENV]))
        except SettingsError as error:
            self.error = str(error)
            logger.error("settings ConfigMap ignored: %s", error)
            return False
        self.error = None
        if new == self.current:
            return False
        self.current = new
        logger.info(
            "settings changed: runtime image %s, downloader image %s, %d engine env entries",
            new.runtime_image,
            new.downloader_image,
            len(new.engine_env),
        )
        return True
