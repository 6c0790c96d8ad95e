"""What every child of one backend derives from it: names, cache volume and paths, ports, LoRA downloads.

Computed once per backend so the ModelServing, ModelServer and autoscaling objects agree on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.modelbooster.synthesis.errors import SynthesisError
from reconciler.modelbooster.synthesis.owner import Owner
from shared.api.modelbooster import ModelBackend, ModelWorker
from shared.engine_config import (
    EnginePortError,
    engine_port,
    runtime_metrics_path,
    runtime_port,
    runtime_url,
    worker_type,
)
from shared.engines.engine import Engine
from shared.engines.registry import engine_for
from shared.naming import backend_resource_name
from shared.uris import (
    HOSTPATH_SCHEME,
    PVC_SCHEME,
    cache_mount_path,
    cache_path,
    claim_name,
    download_path_under,
)

WEIGHTS_VOLUME_SUFFIX = "-weights"


@dataclass(frozen=True)
class LoraDownload:
    name: str
    source: str
    output_dir: str


@dataclass(frozen=True)
class BackendPlan:
    owner: Owner
    backend: ModelBackend
    engine: Engine
    resource_name: str
    volume_name: str
    mount_path: str
    model_path: str
    engine_port: int
    runtime_port: int
    runtime_url: str
    runtime_metrics_path: str
    loras: tuple[LoraDownload, ...]

    def cache_volume(self) -> dict[str, Any]:
        """A fresh cache volume object (docs/design/synthesis.md §6, Q11)."""
        uri = self.backend.cache_uri or ""
        if not uri:
            return {"name": self.volume_name, "emptyDir": {}}
        if uri.startswith(PVC_SCHEME):
            return {"name": self.volume_name, "persistentVolumeClaim": {"claimName": claim_name(uri)}}
        return {"name": self.volume_name, "hostPath": {"path": cache_path(uri), "type": "DirectoryOrCreate"}}

    def cache_mount(self) -> dict[str, Any]:
        return {"name": self.volume_name, "mountPath": self.mount_path}


def _check_cache_uri(uri: str) -> None:
    if not uri:
        return
    if uri.startswith(PVC_SCHEME):
        if not claim_name(uri):
            raise SynthesisError(f'invalid cacheURI "{uri}": must include a PVC claim name')
    elif uri.startswith(HOSTPATH_SCHEME):
        if not cache_path(uri):
            raise SynthesisError(f'invalid cacheURI "{uri}": must include a host path')
    else:
        raise SynthesisError(f"not support prefix in CacheURI: {uri}")


def last_worker(backend: ModelBackend, kind: str) -> ModelWorker | None:
    """The worker of a type; the last one when several share it, as in the reference."""
    found = None
    for worker in backend.workers:
        if worker_type(worker) == kind:
            found = worker
    return found


def require_worker(backend: ModelBackend, kind: str) -> ModelWorker:
    worker = last_worker(backend, kind)
    if worker is None:
        raise SynthesisError(f"{kind} worker not found in backend: {backend.name}")
    return worker


# The workers each backend type needs, checked in this order (docs/design/synthesis.md §6).
REQUIRED_WORKERS: dict[str, tuple[str, ...]] = {
    "vLLM": ("server",),
    "vLLMDisaggregated": ("prefill", "decode"),
    "SGLang": ("server",),
}
DISAGGREGATED_WORKERS = ("prefill", "decode")


def is_disaggregated(backend: ModelBackend) -> bool:
    """Prefill and decode roles rather than one server (a shape of the backend type, whatever the engine)."""
    return REQUIRED_WORKERS.get(backend.type) == DISAGGREGATED_WORKERS


def plan_backend(owner: Owner, backend: ModelBackend) -> BackendPlan:
    """Check what every child of the backend relies on, in the reference's order (the workers, the engine
    port, the cache URI), and derive the shared values."""
    if backend.type not in REQUIRED_WORKERS:
        raise SynthesisError(f"not support model backend type: {backend.type}")
    for kind in REQUIRED_WORKERS[backend.type]:
        require_worker(backend, kind)
    engine = engine_for(backend.type)
    try:
        port = engine_port(backend.workers, default=engine.default_port)
    except EnginePortError as error:
        raise SynthesisError(str(error)) from None
    cache_uri = backend.cache_uri or ""
    _check_cache_uri(cache_uri)
    env = backend.env
    mount_path = cache_mount_path(cache_uri)
    return BackendPlan(
        owner=owner,
        backend=backend,
        engine=engine,
        resource_name=backend_resource_name(owner.name, backend.name),
        volume_name=backend.name + WEIGHTS_VOLUME_SUFFIX,
        mount_path=mount_path,
        model_path=download_path_under(mount_path, source_uri=backend.model_uri),
        engine_port=port,
        runtime_port=runtime_port(env),
        runtime_url=runtime_url(env, port=port),
        runtime_metrics_path=runtime_metrics_path(env),
        loras=tuple(
            LoraDownload(
                name=lora.name,
                source=lora.artifact_url,
                output_dir=download_path_under(mount_path, source_uri=lora.artifact_url),
            )
            for lora in backend.lora_adapters or ()
        ),
    )
