"""Dynamic LoRA on SGLang backends (docs/design/reconciler.md §10): adapters change on running pods through
SGLang 0.5.23's own routes (`/load_lora_adapter`, `/unload_lora_adapter` on the engine port, bodies as its
LoadLoRAAdapterReqInput / UnloadLoRAAdapterReqInput define them), after the runtime sidecar downloaded the adapter
(`/v1/download_model`); no rollout, error bodies read only as far as their message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from reconciler.modelbooster.kinds import MODEL_SERVING
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually, quiet
from tests.reconciler.test_lora import FakeRuntime, lora, running_pod, set_adapters


class FakeSGLang(FakeRuntime):
    """SGLang's LoRA routes, or the runtime sidecar's download route, on loopback: answers as SGLang does (200 with
    `success`, 400 with the reason), or with an endless error body."""

    def __init__(self, routes: tuple[str, ...]) -> None:
        super().__init__(routes)
        self.error_status = 400

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.calls.append((request.path, body))
        if request.path == "/load_lora_adapter" and self.endless_errors:
            return await self._endless_error(request)
        if request.path == "/load_lora_adapter" and self.fail_loads:
            return web.json_response({"success": False, "error_message": "adapter rank too large"}, status=400)
        return web.json_response({"success": True, "error_message": ""})

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for called, body in self.calls if called == path]


@pytest.fixture
async def engine() -> AsyncIterator[FakeSGLang]:
    server = FakeSGLang(("/load_lora_adapter", "/unload_lora_adapter"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def sidecar() -> AsyncIterator[FakeSGLang]:
    server = FakeSGLang(("/v1/download_model",))
    await server.start()
    yield server
    await server.stop()


def sglang_backend(engine_port: int, runtime_port: int, *adapters: str, enable_lora: bool = True) -> dict[str, Any]:
    config: dict[str, Any] = {"port": engine_port, "max-lora-rank": 16}
    if enable_lora:
        config["enable-lora"] = True
    return backend(
        "a",
        type="SGLang",
        env=[{"name": "RUNTIME_PORT", "value": str(runtime_port)}],
        loraAdapters=[lora(name) for name in adapters],
        workers=[{"type": "server", "image": "lmsysorg/sglang:v0.5.23", "replicas": 1, "pods": 1, "config": config}],
    )


async def _running(cluster: Cluster, backend_spec: dict[str, Any]) -> str:
    created = cluster.create_booster(booster("m", backend_spec))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=created["metadata"]["uid"])
    return str((cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"])


async def test_adapters_load_and_unload_through_sglangs_routes_without_a_rollout(
    cluster: Cluster, reconciler: RunningReconciler, engine: FakeSGLang, sidecar: FakeSGLang
) -> None:
    serving_rv = await _running(cluster, sglang_backend(engine.port, sidecar.port, "sql"))

    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: [b["lora_name"] for b in engine.bodies("/load_lora_adapter")] == ["chat"])
    [download] = sidecar.bodies("/v1/download_model")
    assert download == {"async_download": False, "output_dir": download["output_dir"], "source": "hf://acme/chat"}
    assert download["output_dir"].startswith("/")
    # SGLang loads from where the sidecar put it; its request model has `lora_name` and `lora_path`.
    assert engine.bodies("/load_lora_adapter") == [{"lora_name": "chat", "lora_path": download["output_dir"]}]
    await quiet(0.3)
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"] == serving_rv
    assert cluster.events("LoraUpdated")

    await set_adapters(cluster, "chat")
    await eventually(lambda: engine.bodies("/unload_lora_adapter") == [{"lora_name": "sql"}])
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"] == serving_rv


async def _failed_load(cluster: Cluster, engine: FakeSGLang, sidecar: FakeSGLang) -> str:
    """Adds `chat` to a running backend whose engine is set to fail it; the Failed condition's message."""
    await _running(cluster, sglang_backend(engine.port, sidecar.port, "sql"))
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: cluster.condition("m", "Failed") == "True", within=10.0)
    message = str(cluster.conditions()["Failed"]["message"])
    assert "loading LoRA adapter chat into pod m-a-0: HTTP 400: " in message
    return message


async def test_a_refused_load_is_reported_with_sglangs_reason_and_retried(
    cluster: Cluster, reconciler: RunningReconciler, engine: FakeSGLang, sidecar: FakeSGLang
) -> None:
    engine.fail_loads = True
    message = await _failed_load(cluster, engine, sidecar)
    assert "adapter rank too large" in message
    engine.fail_loads = False
    await eventually(lambda: cluster.condition("m", "Failed") == "False", within=5.0)


async def test_an_endless_error_body_is_read_only_as_far_as_its_message(
    cluster: Cluster, reconciler: RunningReconciler, engine: FakeSGLang, sidecar: FakeSGLang
) -> None:
    engine.endless_errors = True
    assert len(await _failed_load(cluster, engine, sidecar)) < 1000
    await quiet(0.5)
    assert engine.error_bytes_sent < 64 << 20


async def test_without_enable_lora_in_the_config_adapters_roll_out(
    cluster: Cluster, reconciler: RunningReconciler, engine: FakeSGLang, sidecar: FakeSGLang
) -> None:
    serving_rv = await _running(cluster, sglang_backend(engine.port, sidecar.port, "sql", enable_lora=False))
    await set_adapters(cluster, "sql", "chat")
    await eventually(
        lambda: (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"] != serving_rv,
        message="the ModelServing rolled out with the new adapters",
    )
    assert engine.calls == []
    assert sidecar.calls == []
