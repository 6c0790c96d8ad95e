"""Dynamic LoRA updates (docs/design/reconciler.md §10, with the Q5 fix): a backend whose engine takes adapters at
run time (vLLM with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=true`, SGLang with `enable-lora`) changes its adapters over
HTTP on the running engines, by the calls its engine names, instead of by a rollout. Per (ModelBooster uid,
backend) it remembers which adapters the live template carries and each pod has loaded; that memory is in the
process (a restart forgets it) and is dropped when the reconcile finds the ModelBooster gone.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.modelbooster.synthesis.backend import is_disaggregated
from reconciler.runtime.apply import Desired, child_matches, controller_ref, is_controlled_by
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.informer import Informer, label_index
from reconciler.runtime.kinds import POD
from reconciler.runtime.lean import full_object
from reconciler.runtime.manager import Manager
from reconciler.runtime.objects import metadata
from reconciler.runtime.source import ObjectKey
from shared.api.modelbooster import ModelBackend, ModelBooster
from shared.constants import (
    LABEL_MANAGED_BY,
    LABEL_MODEL_NAME,
    LABEL_MODEL_UID,
    LABEL_MODELSERVING_NAME,
    MANAGED_BY_VALUE,
)
from shared.engine_config import ConfigError, EnginePortError, config_mapping, engine_port, runtime_port
from shared.engines.engine import Engine, LoraCall
from shared.engines.registry import UnknownEngine, engine_for
from shared.naming import backend_resource_name
from shared.uris import download_path

logger = logging.getLogger(__name__)

SERVING_INDEX = "modelserving-name"
Adapter = tuple[str, str]  # (name, artifactURL)
# What of an engine's error answer is read: enough for its message, never its whole body.
MAX_ERROR_BYTES: Final = 4096
MAX_ERROR_TEXT: Final = 200


def _server_config(backend: ModelBackend) -> Any:
    for worker in backend.workers:
        if (worker.type or "server") == "server":
            try:
                return config_mapping(worker.config)
            except ConfigError:
                return None
    return None


def runtime_lora_enabled(backend: ModelBackend) -> bool:
    """Only single-server backends (a disaggregated one loads adapters at start only, as in the reference)."""
    if is_disaggregated(backend):
        return False
    try:
        engine = engine_for(backend.type)
    except UnknownEngine:
        return False
    return engine.runtime_lora_enabled(backend.env, _server_config(backend))


def adapters_of(backend: ModelBackend) -> tuple[Adapter, ...]:
    """In spec order: the order shapes the rendered pod template (`--lora-modules`, downloader indices)."""
    return tuple((lora.name, lora.artifact_url) for lora in backend.lora_adapters or ())


def _pod_summary(pod: dict[str, Any]) -> dict[str, Any]:
    """Pod informer transform: keep only what LoRA updates read (the cache holds every engine pod), the controller
    reference included (whose pod it is)."""
    meta = metadata(pod)
    status = pod.get("status") or {}
    kept: dict[str, Any] = {
        key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion", "labels") if key in meta
    }
    owner = controller_ref(pod)
    if owner is not None:
        kept["ownerReferences"] = [{key: owner[key] for key in ("kind", "name", "uid", "controller") if key in owner}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": kept,
        "status": {key: status[key] for key in ("phase", "podIP") if key in status},
    }


def setup_pod_informer(manager: Manager, *, namespaces: Sequence[str]) -> Informer:
    """Engine pods of our ModelServings: their pod templates carry our managed-by label."""
    return manager.informer(
        POD,
        namespaces=namespaces,
        label_selector=f"{LABEL_MANAGED_BY}={MANAGED_BY_VALUE}",
        transform=_pod_summary,
        indexers={SERVING_INDEX: label_index(LABEL_MODELSERVING_NAME)},
    )


@dataclass
class _BackendState:
    template: tuple[Adapter, ...]  # what the live ModelServing's pod template was rendered with
    target: frozenset[Adapter]  # what the pods should serve
    loaded: dict[str, frozenset[Adapter]] = field(default_factory=dict)  # pod uid -> adapters at runtime

    @property
    def diverged(self) -> bool:
        return self.target != frozenset(self.template)


@dataclass(frozen=True)
class LoraWork:
    key: tuple[str, str]  # (ModelBooster uid, backend)
    namespace: str
    serving: str
    serving_uid: str  # the live ModelServing, controlled by the ModelBooster: its pods are the ones called
    backend: str
    engine: Engine
    port: int  # the runtime sidecar's
    engine_port: int
    cache_uri: str
    target: frozenset[Adapter]


@dataclass
class LoraPlan:
    desired: list[Desired]
    work: list[LoraWork]
    templates: dict[str, tuple[Adapter, ...]]  # backend -> adapters its desired ModelServing carries
    targets: dict[str, frozenset[Adapter]]  # backend -> adapters its pods should serve


class LoraUpdater:
    def __init__(self, *, pods: Informer, recorder: EventRecorder, timeout: float = 300.0) -> None:
        self.pods = pods
        self.recorder = recorder
        self.timeout = timeout
        self._state: dict[tuple[str, str], _BackendState] = {}
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def forget(self, uid: str) -> None:
        for key in [key for key in self._state if key[0] == uid]:
            del self._state[key]

    def wants_pod_events(self, uid: str) -> bool:
        """Whether new pods of this ModelBooster need adapters their template does not carry."""
        return any(state.diverged for key, state in self._state.items() if key[0] == uid)

    # ------------------------------------------------------------------ planning
    def kept_templates(self, typed: ModelBooster, servings: Informer) -> dict[str, tuple[Adapter, ...]]:
        """By backend: the adapters its live ModelServing's template carries, where the spec now asks for others.
        The reconcile renders those templates (rendering.render_with_adapters) for `plan` to compare."""
        uid = str(typed.metadata.uid)
        namespace, model = str(typed.metadata.namespace or "default"), str(typed.metadata.name)
        kept: dict[str, tuple[Adapter, ...]] = {}
        for backend in typed.spec.backends:
            state = self._state.get((uid, backend.name))
            if state is None or not runtime_lora_enabled(backend) or state.template == adapters_of(backend):
                continue
            live = servings.get(namespace, backend_resource_name(model, backend.name))
            if live is not None and is_controlled_by(live, uid):
                kept[backend.name] = state.template
        return kept

    def plan(
        self,
        *,
        typed: ModelBooster,
        desired: list[Desired],
        servings: Informer,
        kept: Mapping[str, Desired],
    ) -> LoraPlan:
        """`kept`: by backend, its ModelServing rendered with the adapters of `kept_templates`."""
        uid = str(typed.metadata.uid)
        namespace, model = str(typed.metadata.namespace or "default"), str(typed.metadata.name)
        desired = list(desired)
        work: list[LoraWork] = []
        templates: dict[str, tuple[Adapter, ...]] = {}
        targets: dict[str, frozenset[Adapter]] = {}
        enabled = set()
        for backend in typed.spec.backends:
            if not runtime_lora_enabled(backend):
                continue
            enabled.add(backend.name)
            serving = backend_resource_name(model, backend.name)
            wanted = adapters_of(backend)
            templates[backend.name] = wanted
            targets[backend.name] = frozenset(wanted)
            state = self._state.get((uid, backend.name))
            live = servings.get(namespace, serving)
            if state is None or live is None or not is_controlled_by(live, uid):
                continue
            if state.template != wanted:
                previous = kept.get(backend.name)
                if previous is None or not child_matches(
                    previous.obj, full_object(live), ignore=previous.foreign_after_create
                ):
                    continue  # more than adapters changed: roll out with the new adapters
                desired = [previous if d.kind == MODEL_SERVING and d.name == serving else d for d in desired]
                templates[backend.name] = state.template
            engine = engine_for(backend.type)
            try:
                port = engine_port(backend.workers, default=engine.default_port)
            except EnginePortError:
                continue  # refused at admission; nothing to call
            work.append(
                LoraWork(
                    key=(uid, backend.name),
                    namespace=namespace,
                    serving=serving,
                    serving_uid=str(metadata(live).get("uid") or ""),
                    backend=backend.name,
                    engine=engine,
                    port=runtime_port(backend.env),
                    engine_port=port,
                    cache_uri=backend.cache_uri or "",
                    target=frozenset(wanted),
                )
            )
        for key in [key for key in self._state if key[0] == uid and key[1] not in enabled]:
            del self._state[key]
        return LoraPlan(desired=desired, work=work, templates=templates, targets=targets)

    def commit(self, *, uid: str, backend: str, template: tuple[Adapter, ...], target: frozenset[Adapter]) -> None:
        """The backend's ModelServing now carries `template` (it was created, updated or found equal)."""
        state = self._state.get((uid, backend))
        if state is None or state.template != template:
            self._state[(uid, backend)] = _BackendState(template=template, target=target)
        else:
            state.target = target

    # ------------------------------------------------------------------ executing
    async def execute(self, booster: dict[str, Any], work: Sequence[LoraWork]) -> list[str]:
        """Bring every running pod's adapters to the target; return failure messages (empty: all done)."""
        failures: list[str] = []
        for item in work:
            state = self._state.get(item.key)
            if state is None:
                continue
            state.target = item.target
            pods = [pod for pod in self.pods.by_index(SERVING_INDEX, item.serving) if _ours(pod, item)]
            live_uids = {str(pod["metadata"].get("uid")) for pod in pods}
            for gone in [uid for uid in state.loaded if uid not in live_uids]:
                del state.loaded[gone]
            running = [pod for pod in pods if _running_with_ip(pod)]
            results = await asyncio.gather(*(self._update_pod(booster, item, state, pod) for pod in running))
            failures.extend(message for messages in results for message in messages)
        return failures

    async def _update_pod(
        self, booster: dict[str, Any], item: LoraWork, state: _BackendState, pod: dict[str, Any]
    ) -> list[str]:
        pod_uid = str(pod["metadata"].get("uid"))
        pod_name = str(pod["metadata"].get("name"))
        loaded = set(state.loaded.get(pod_uid, frozenset(state.template)))
        if loaded == item.target:
            return []
        ip = pod["status"]["podIP"]
        failures: list[str] = []
        # An adapter whose artifact changed is unloaded, then loaded from the new source.
        for name, source in sorted(loaded - item.target):
            error = await self._calls(ip, item, item.engine.lora_unload_calls(name))
            if error is None:
                loaded.discard((name, source))
            else:
                failures.append(f"unloading LoRA adapter {name} from pod {pod_name}: {error}")
                await self.recorder.emit(booster, type="Warning", reason="LoraUnloadFailed", message=failures[-1])
        for name, source in sorted(item.target - loaded):
            output_dir = download_path(cache_uri=item.cache_uri, source_uri=source)
            error = await self._calls(ip, item, item.engine.lora_load_calls(name, source, output_dir))
            if error is None:
                loaded.add((name, source))
            else:
                failures.append(f"loading LoRA adapter {name} into pod {pod_name}: {error}")
                await self.recorder.emit(booster, type="Warning", reason="LoraLoadFailed", message=failures[-1])
        state.loaded[pod_uid] = frozenset(loaded)
        if not failures:
            await self.recorder.emit(
                booster,
                type="Normal",
                reason="LoraUpdated",
                message=f"pod {pod_name} of ModelServing {item.serving} serves LoRA adapters "
                f"{', '.join(sorted(name for name, _ in item.target)) or '(none)'}",
            )
        return failures

    async def _calls(self, ip: str, item: LoraWork, calls: Sequence[LoraCall]) -> str | None:
        """The engine's calls in order, to the sidecar's or the engine's port; the first failure ends them."""
        for call in calls:
            port = item.port if call.to == "runtime" else item.engine_port
            error = await self._post(f"http://{ip}:{port}{call.path}", dict(call.body), ok=call.ok)
            if error is not None:
                return error
        return None

    async def _post(self, url: str, body: dict[str, Any], *, ok: tuple[int, ...]) -> str | None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        try:
            async with self._session.post(
                url, data=json.dumps(body), headers={"Content-Type": "application/json"}
            ) as response:
                if response.status in ok:
                    return None
                text = (await _read_prefix(response, MAX_ERROR_BYTES)).decode("utf-8", "replace")
                text = text[:MAX_ERROR_TEXT].strip()
                return f"HTTP {response.status}{': ' + text if text else ''}"
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def _read_prefix(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most `limit` bytes of the body; the rest is never read (the connection is closed rather than drained)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await response.content.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if not response.content.at_eof():
        response.close()
    return b"".join(chunks)


def _ours(pod: dict[str, Any], item: LoraWork) -> bool:
    """Whether the pod is one the ModelServing controls, with our ModelBooster's uid label (module docstring)."""
    meta = metadata(pod)
    owner = controller_ref(pod)
    return (
        meta.get("namespace") == item.namespace
        and owner is not None
        and owner.get("kind") == MODEL_SERVING.kind
        and bool(item.serving_uid)
        and owner.get("uid") == item.serving_uid
        and (meta.get("labels") or {}).get(LABEL_MODEL_UID) == item.key[0]
    )


def _running_with_ip(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and bool(status.get("podIP"))


def pod_owner_key(pod: dict[str, Any]) -> ObjectKey | None:
    meta = metadata(pod)
    model = (meta.get("labels") or {}).get(LABEL_MODEL_NAME)
    return ObjectKey(str(meta.get("namespace") or ""), str(model)) if model else None


def pod_owner_uid(pod: dict[str, Any]) -> str:
    return str((metadata(pod).get("labels") or {}).get(LABEL_MODEL_UID) or "")
