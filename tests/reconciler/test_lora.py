"""Dynamic LoRA updates (docs/design/reconciler.md §10, Q5 fixed): adapters change on running pods, no rollout."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from reconciler.modelbooster import rendering
from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_ROUTE, MODEL_SERVING
from reconciler.modelbooster.pod_selection import template_uid
from reconciler.modelbooster.synthesis import synthesize, unowned_uid
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.runtime.kinds import POD
from reconciler.runtime.source import ObjectKey
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, Cluster, RunningReconciler, backend, booster, eventually, quiet
from tests.reconciler.test_rendered_children import rendered


class FakeRuntime:
    """The runtime sidecar's LoRA API on loopback: records calls, can be told to fail (with a message, or with an
    endless error body, of which it counts what it managed to send)."""

    def __init__(self, routes: tuple[str, ...] = ("/v1/load_lora_adapter", "/v1/unload_lora_adapter")) -> None:
        self.routes = routes
        self.error_status = 500
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail_loads = False
        self.endless_errors = False
        self.error_bytes_sent = 0
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.calls.append((request.path, body))
        if request.path.endswith("/load_lora_adapter") and self.endless_errors:
            return await self._endless_error(request)
        if request.path.endswith("/load_lora_adapter") and self.fail_loads:
            return web.Response(status=500, text="download failed")
        return web.Response(status=200, text="ok")

    async def _endless_error(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=self.error_status)
        await response.prepare(request)
        chunk = b"out of memory; " * 4096
        try:
            while self.error_bytes_sent < 256 << 20:
                await response.write(chunk)
                self.error_bytes_sent += len(chunk)
        except (ConnectionError, RuntimeError):
            pass  # the client stopped reading
        return response

    async def start(self) -> None:
        app = web.Application()
        for route in self.routes:
            app.router.add_post(route, self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def names(self, action: str) -> list[str]:
        return [body["lora_name"] for path, body in self.calls if path == f"/v1/{action}_lora_adapter"]


@pytest.fixture
async def runtime() -> AsyncIterator[FakeRuntime]:
    server = FakeRuntime()
    await server.start()
    yield server
    await server.stop()


def lora(name: str) -> dict[str, str]:
    return {"name": name, "artifactURL": f"hf://acme/{name}"}


def dynamic_backend(port: int, *adapters: str) -> dict[str, Any]:
    env = [{"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"}, {"name": "RUNTIME_PORT", "value": str(port)}]
    return backend("a", env=env, loraAdapters=[lora(name) for name in adapters])


def serving_owner(cluster: Cluster, serving: str = "m-a") -> dict[str, Any]:
    """The controller reference Kthena's ModelServing controller puts on the pods it makes."""
    live = cluster.get(MODEL_SERVING, serving)
    assert live is not None
    return {"apiVersion": MODEL_SERVING.api_version, "kind": "ModelServing", "name": serving,
            "uid": live["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip


async def running_pod(
    cluster: Cluster, name: str, *, uid: str, serving: str = "m-a", owner: dict[str, Any] | bool | None = True
) -> None:
    """An engine pod of the ModelServing: its labels and, unless `owner` says otherwise, its controller reference."""
    labels = {
        "workload.serving.volcano.sh/managed-by": "workload.serving.volcano.sh",
        "workload.serving.volcano.sh/model-name": "m",
        "workload.serving.volcano.sh/model-uid": uid,
        "modelserving.volcano.sh/name": serving,
    }
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": labels}
    if owner is True:
        meta["ownerReferences"] = [serving_owner(cluster, serving)]
    elif isinstance(owner, dict):
        meta["ownerReferences"] = [owner]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
           "spec": {"containers": [{"name": "engine", "image": "vllm"}]}}  # fmt: skip
    await cluster.client.create(POD, pod)
    await cluster.client.patch(POD, NS, name, {"status": {"phase": "Running", "podIP": "127.0.0.1"}},
                               subresource="status")  # fmt: skip


async def set_adapters(cluster: Cluster, *adapters: str) -> None:
    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0]["loraAdapters"] = [lora(name) for name in adapters]
    await cluster.replace_spec("m", spec)


async def test_only_adapters_changed_loads_them_on_running_pods_without_a_rollout(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql"), backend("b")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=created["metadata"]["uid"])
    serving_rv = (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"]

    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: runtime.names("load") == ["chat"], message="chat loaded")
    load = runtime.calls[0][1]
    assert load == {"async_download": False, "lora_name": "chat", "source": "hf://acme/chat",
                    "output_dir": load["output_dir"]}  # fmt: skip
    assert load["output_dir"].startswith("/")
    await eventually(lambda: (cluster.get(MODEL_ROUTE, "m") or {})["spec"].get("loraAdapters") == ["chat", "sql"])
    await quiet(0.3)
    # The ModelServing kept its template (no rollout) and no ModelServing was deleted (Q5).
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"] == serving_rv
    assert cluster.names(MODEL_SERVING) == ["m-a", "m-b"]
    assert cluster.condition("m", "Failed") == "False"
    assert cluster.events("LoraUpdated")

    # Removing one unloads it; a no-op resync afterwards calls nothing.
    await set_adapters(cluster, "chat")
    await eventually(lambda: runtime.names("unload") == ["sql"])
    calls = len(runtime.calls)
    reconciler.manager.controllers[0].enqueue_all()
    await quiet(0.3)
    assert len(runtime.calls) == calls
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"] == serving_rv


async def test_failed_loads_are_reported_and_retried(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=created["metadata"]["uid"])
    runtime.fail_loads = True

    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    failed = cluster.conditions()["Failed"]
    assert failed["reason"] == "LoraUpdateFailed"
    assert "loading LoRA adapter chat into pod m-a-0: HTTP 500: download failed" in failed["message"]
    await eventually(lambda: cluster.events("LoraLoadFailed"))
    assert cluster.events("LoraLoadFailed")[0]["type"] == "Warning"

    runtime.fail_loads = False
    await eventually(lambda: cluster.condition("m", "Failed") == "False", within=5.0)
    assert runtime.names("load").count("chat") >= 2  # retried until it worked
    assert runtime.names("unload") == []


async def test_a_new_pod_gets_the_runtime_adapters_its_template_lacks(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql")))
    uid = created["metadata"]["uid"]
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=uid)
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: runtime.names("load") == ["chat"])

    await running_pod(cluster, "m-a-1", uid=uid)  # e.g. a scale-up from the old template
    await eventually(lambda: runtime.names("load") == ["chat", "chat"], message="new pod caught up")


async def test_more_than_adapters_changed_rolls_out_normally(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=created["metadata"]["uid"])
    spec = (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]
    spec["backends"][0]["loraAdapters"].append(lora("chat"))
    spec["backends"][0]["workers"][0]["image"] = "vllm/vllm-openai:v0.11.0"
    await cluster.replace_spec("m", spec)
    await eventually(lambda: "chat" in json.dumps((cluster.get(MODEL_SERVING, "m-a") or {})["spec"]))
    await quiet(0.3)
    assert runtime.calls == []  # the new pods start with the adapter on their command line


async def test_without_the_env_switch_adapters_roll_out(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    created = cluster.create_booster(booster("m", backend("a", loraAdapters=[lora("sql")])))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=created["metadata"]["uid"])
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: "hf://acme/chat" in json.dumps((cluster.get(MODEL_SERVING, "m-a") or {})["spec"]))
    assert runtime.calls == []


async def test_only_pods_the_model_serving_controls_are_called(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    """Labels anyone who may create pods can copy: a pod labelled as an engine of backend a but not controlled by
    its ModelServing (no controller, another ModelServing, a reference that is not the controller, or the uid
    label of another ModelBooster) gets nothing."""
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql"), backend("b")))
    uid = created["metadata"]["uid"]
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "lookalike", uid=uid, owner=None)
    await running_pod(cluster, "of-b", uid=uid, owner=serving_owner(cluster, "m-b"))
    await running_pod(cluster, "not-controller", uid=uid, owner={**serving_owner(cluster), "controller": False})
    await running_pod(cluster, "other-booster", uid="someone-else")
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: (cluster.get(MODEL_ROUTE, "m") or {})["spec"].get("loraAdapters") == ["chat", "sql"])
    await quiet(0.5)
    assert runtime.calls == []
    # The real engine pod, controlled by the ModelServing, is called.
    await running_pod(cluster, "m-a-0", uid=uid)
    await eventually(lambda: runtime.names("load") == ["chat"])
    await quiet(0.3)
    assert runtime.names("load") == ["chat"]


async def test_an_error_body_is_read_only_as_far_as_its_message(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=created["metadata"]["uid"])
    runtime.endless_errors = True
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: cluster.condition("m", "Failed") == "True", within=10.0)
    failed = cluster.conditions()["Failed"]["message"]
    assert "loading LoRA adapter chat into pod m-a-0: HTTP 500: out of memory; out of memory;" in failed
    assert len(failed) < 1000
    # The reconciler stopped reading after its first few KiB: what the pod sent is what the sockets buffered,
    # far below the 256 MiB it would send to a reader of the whole body.
    await quiet(0.5)
    assert runtime.error_bytes_sent < 64 << 20


async def test_the_lora_state_goes_when_the_reconcile_finds_its_model_booster_gone(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime
) -> None:
    """What is kept per ModelBooster (docs/design/reconciler.md §2) has one owner: the reconcile, which drops it
    once the ModelBooster is gone."""
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql")))
    uid = created["metadata"]["uid"]
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=uid)
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: runtime.names("load") == ["chat"], message="chat loaded")
    state = reconciler.process.registered_by(MODELBOOSTER).reconciler
    assert state.lora.wants_pod_events(uid)  # the template lacks "chat": new pods need it loaded
    assert state.known[ObjectKey(NS, "m")].uid == uid

    await cluster.delete(MODEL_BOOSTER, "m")
    await eventually(lambda: ObjectKey(NS, "m") not in state.known, message="the ModelBooster forgotten")
    assert not state.lora.wants_pod_events(uid)


async def test_synthesis_runs_once_a_reconcile_and_once_more_for_a_template_kept_for_its_adapters(
    cluster: Cluster, reconciler: RunningReconciler, runtime: FakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LoRA planning is handed the rendering of the kept template (rendering.render_with_adapters); it never
    renders by itself."""
    created = cluster.create_booster(booster("m", dynamic_backend(runtime.port, "sql")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await running_pod(cluster, "m-a-0", uid=created["metadata"]["uid"])
    calls: list[str] = []

    def counted(typed: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(str([b.lora_adapters for b in typed.spec.backends]))
        return synthesize(typed, *args, **kwargs)

    monkeypatch.setattr(rendering, "synthesize", counted)
    await reconciler.process.registered_by(MODELBOOSTER).reconciler.reconcile(ObjectKey(NS, "m"))
    assert len(calls) == 1
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: runtime.names("load") == ["chat"], message="chat loaded")
    calls.clear()
    await reconciler.process.registered_by(MODELBOOSTER).reconciler.reconcile(ObjectKey(NS, "m"))
    assert len(calls) == 2  # the spec's adapters, and the template's the ModelServing keeps
    assert "chat" in calls[0]
    assert "chat" not in calls[1]



@pytest.mark.usefixtures("reconciler")
async def test_an_adapter_change_of_an_adopted_template_rolls_it_and_never_calls_its_pods(
    cluster: Cluster, fake: FakeApiServer, runtime: FakeRuntime, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Children `modelbooster render` printed without a uid, applied, then adopted with their template kept: the
    pods carry the model's stand-in uid label, which the ModelServer follows (pod_selection.py), but the LoRA
    updater calls only pods with the ModelBooster's uid label. It never needs to call these: a kept older template
    says nothing of the adapters it runs, so an adapter change rolls it, and the new pods carry the uid."""
    obj = booster("m", dynamic_backend(runtime.port, "sql"))
    children, _ = rendered(obj, tmp_path, capsys)
    for child in children:
        fake.create(child)
    uid = str(cluster.create_booster(obj)["metadata"]["uid"])
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    standin = unowned_uid(NS, "m")
    await running_pod(cluster, "m-a-0", uid=standin)
    await set_adapters(cluster, "sql", "chat")
    await eventually(lambda: template_uid(cluster.get(MODEL_SERVING, "m-a") or {}) == uid, message="rolled")
    await quiet(0.3)
    assert runtime.calls == []
