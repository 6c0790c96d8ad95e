"""The ModelBooster controller's settings (docs/design/reconciler.md §12): its flags, with the process's
environment prefix, and the watched settings ConfigMap, which overrides what shapes children (images, engine
env) without a restart.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from process.flags import Flag, add_flags, positive_float, positive_int, prefixed
from reconciler.modelbooster.synthesis import DEFAULT_DOWNLOADER_IMAGE, DEFAULT_RUNTIME_IMAGE, SynthesisSettings
from reconciler.runtime.environment import SettingsError
from reconciler.runtime.informer import Informer
from reconciler.runtime.ratelimit import RateLimiter, default_controller_rate_limiter
from reconciler.runtime.source import EventType, KeyMapper, Sink
from reconciler.settings import ENV_PREFIX

logger = logging.getLogger(__name__)

NAME: Final = "modelbooster"  # the peer's, and its flags' prefix
KEY_RUNTIME_IMAGE = "model_serving_runtime_image"
KEY_DOWNLOADER_IMAGE = "model_serving_downloader_image"
KEY_ENGINE_ENV = "engine_env.json"
KEY_SGLANG_IMAGE = "model_serving_sglang_image"


@dataclass(frozen=True)
class ModelBoosterSettings:
    workers: int = 5
    runtime_image: str = DEFAULT_RUNTIME_IMAGE
    downloader_image: str = DEFAULT_DOWNLOADER_IMAGE
    config_map: str | None = None
    backoff_base: float = 0.005
    backoff_max: float = 1000.0
    retry_qps: float = 10.0
    retry_burst: int = 100
    lora_timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise SettingsError(f"--{NAME}-workers must be at least 1, got {self.workers}")

    def synthesis(self) -> SynthesisSettings:
        return SynthesisSettings(runtime_image=self.runtime_image, downloader_image=self.downloader_image)

    def rate_limiter(self) -> RateLimiter:
        """Per-key exponential backoff of failed reconciles, under an overall retry rate (controller-runtime's)."""
        return default_controller_rate_limiter(
            base_delay=self.backoff_base, max_delay=self.backoff_max, qps=self.retry_qps, burst=self.retry_burst
        )


# Under the controller's name (`--modelbooster-workers`); the unprefixed spellings of earlier releases still work.
_FLAGS: Final[dict[str, Flag]] = prefixed(NAME, {
    "--workers": Flag("workers", positive_int, 5, "ModelBoosters reconciled in parallel"),
    "--runtime-image": Flag("runtime_image", str, DEFAULT_RUNTIME_IMAGE, "runtime sidecar image"),
    "--downloader-image": Flag("downloader_image", str, DEFAULT_DOWNLOADER_IMAGE, "model/LoRA downloader image"),
    "--config-map": Flag("config_map", str, None, "settings ConfigMap in the controller namespace (watched)"),
    "--lora-timeout": Flag("lora_timeout", positive_float, 300.0, "timeout of one LoRA load/unload call (s)"),
})


def add_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    add_flags(parser, _FLAGS, prefix=ENV_PREFIX, parser=parser, environ=environ)


def settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> ModelBoosterSettings:
    del environ  # every setting here is a flag (or its variable, already read by the parser)
    return ModelBoosterSettings(
        workers=args.workers,
        runtime_image=args.runtime_image,
        downloader_image=args.downloader_image,
        config_map=args.config_map,
        lora_timeout=args.lora_timeout,
    )


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
            if data.get(KEY_SGLANG_IMAGE):
                new = replace(new, sglang_image=data[KEY_SGLANG_IMAGE].strip())
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


class SettingsConfigMap:
    """The settings ConfigMap as a source of the ModelBooster controller (runtime/source.py): new images or env
    wake every ModelBooster, which re-renders; only children whose content changed are written. Its informer must
    sync before the first reconcile, so children are never rendered with the start-up images when the map says
    otherwise."""

    def __init__(self, informer: Informer, dynamic: DynamicSettings) -> None:
        self.informer = informer
        self.dynamic = dynamic

    def attach(self, sink: Sink, mapper: KeyMapper) -> None:
        del mapper  # any change concerns every ModelBooster

        def on_change(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            data = (new or {}).get("data") if event != "DELETED" else None
            if self.dynamic.update(data if isinstance(data, dict) else None):
                sink.enqueue_all()

        self.informer.add_handler(on_change)

    async def wait_synced(self) -> None:
        await self.informer.wait_synced()
