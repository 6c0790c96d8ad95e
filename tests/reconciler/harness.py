"""Running real reconcilers against the fake API server, and reading what they did.

The fake serves on the test's event loop; each `RunningReconciler` is the real process assembly
(`reconciler.assembly.build`) with fast timings, talking HTTP to the fake through its own client whose
User-Agent names it, so the fake's request log tells which reconciler sent what.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import yaml

from reconciler.assembly import ReconcilerProcess, ReconcilerSettings, build
from reconciler.modelbooster.kinds import (
    AUTOSCALING_POLICY,
    AUTOSCALING_POLICY_BINDING,
    MODEL_BOOSTER,
    MODEL_ROUTE,
    MODEL_SERVER,
    MODEL_SERVING,
)
from reconciler.modelbooster.settings import ModelBoosterSettings
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import EVENT, Kind
from reconciler.runtime.leader import LeaseTimings
from reconciler.runtime.metrics import Metrics
from reconciler.settings import ProcessSettings
from tests.fakeapi.reqlog import LoggedRequest
from tests.fakeapi.server import FakeApiServer

ROOT = Path(__file__).resolve().parents[2]
CRD_FILES = [
    ROOT / "charts/modelbooster/crds/workload.serving.volcano.sh_modelboosters.yaml",
    *sorted((ROOT / "charts/modelbooster/charts/child-crds/crds").glob("*.yaml")),
]
NS = "ns"


@functools.cache
def crd_documents() -> tuple[dict[str, Any], ...]:
    """The CRDs, parsed once per test session (the ModelServing CRD alone is a large YAML file)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(yaml.load(path.read_text(), Loader=loader) for path in CRD_FILES)
USER_AGENT = "modelbooster-reconciler"

FAST = ReconcilerSettings(
    process=ProcessSettings(
        leader_elect=False,
        metrics_port=0,
        controller_namespace="default",
        lease=LeaseTimings(lease_duration=1.5, renew_deadline=1.0, retry_period=0.2),
        resync_period=0,
        watch_timeout=30,
        shutdown_timeout=2.0,
    ),
    modelbooster=ModelBoosterSettings(
        backoff_base=0.01,
        backoff_max=0.3,
        retry_qps=100,
        retry_burst=100,
        lora_timeout=2.0,
    ),
)
_PROCESS_FIELDS = frozenset(field.name for field in fields(ProcessSettings))


def overridden(settings: ReconcilerSettings, **overrides: Any) -> ReconcilerSettings:
    """`settings` with some fields changed, each where it belongs: the process's or the ModelBooster
    controller's (tests name them flat, as the command line does)."""
    process = {key: value for key, value in overrides.items() if key in _PROCESS_FIELDS}
    modelbooster = {key: value for key, value in overrides.items() if key not in _PROCESS_FIELDS}
    return settings.replace(
        process=replace(settings.process, **process),
        modelbooster=replace(settings.of(MODELBOOSTER), **modelbooster),
    )


def backend(name: str, **overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "type": "vLLM",
        "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "minReplicas": 1,
        "maxReplicas": 1,
        "workers": [{"type": "server", "image": "vllm/vllm-openai:v0.10.1", "replicas": 1, "pods": 1}],
    }
    spec.update(overrides)
    return spec


def booster(name: str = "m", *backends: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": MODEL_BOOSTER.api_version,
        "kind": MODEL_BOOSTER.kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"backends": list(backends) or [backend("a")], **spec},
    }


def model_level(*backends: dict[str, Any]) -> dict[str, Any]:
    """Two backends scaled together by a model-level policy (every backend needs a scalingCost)."""
    scaled = [{**b, "scalingCost": 10 * (i + 1), "minReplicas": 1, "maxReplicas": 4} for i, b in enumerate(backends)]
    return booster(
        "m",
        *scaled,
        autoscalingPolicy={"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]},
    )


class RunningReconciler:
    def __init__(self, fake: FakeApiServer, settings: ReconcilerSettings, name: str) -> None:
        self.fake = fake
        self.name = name
        self.user_agent = f"{USER_AGENT} ({name})"
        self.settings = overridden(settings, identity=name)
        self.metrics = Metrics()
        self.client = KubeClient.for_configuration(
            fake.aio_configuration(), user_agent=self.user_agent, metrics=self.metrics
        )
        self.process: ReconcilerProcess = build(self.settings, self.client, self.metrics)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def manager(self) -> Any:
        return self.process.manager

    async def start(self) -> RunningReconciler:
        self._task = asyncio.create_task(self.process.manager.run(self._stop))
        await asyncio.wait_for(self.process.manager.wait_synced(), 10)
        return self

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stop.set()
        await asyncio.wait_for(self._task, 10)
        self._task = None
        await self.client.close()

    async def kill(self) -> None:
        """Die without any graceful step (no draining, no Lease release): a crashed pod."""
        if self._task is None:
            return
        manager = self.process.manager
        if manager.elector is not None:
            manager.elector._lease = None  # a dead process releases nothing
        # Cut the work mid-flight (in-flight requests are abandoned), then everything else.
        internals = [task for task in (manager._campaign, *manager._informer_tasks) if task is not None]
        for task in internals:
            task.cancel()
        await asyncio.gather(*internals, return_exceptions=True)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._task = None
        await self.client.close()

    def writes(self) -> list[LoggedRequest]:
        return [e for e in self.fake.requests.writes() if e.user_agent == self.user_agent]

    def metric(self, metric_name: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(metric_name, labels)
        return 0.0 if value is None else value


def child_writes(reconciler: RunningReconciler) -> list[tuple[str, str, str]]:
    """(verb, resource, name) of the reconciler's writes to children (creates carry the name in the body)."""
    result = []
    for entry in reconciler.writes():
        if entry.resource in ("events", "leases") or entry.resource == "modelboosters":
            continue
        name = entry.name or (entry.body or {}).get("metadata", {}).get("name", "")
        result.append((entry.verb, entry.resource, name))
    return sorted(result)


class Cluster:
    """What a test (the user, an autoscaler, a ModelServing controller) does through the API."""

    def __init__(self, fake: FakeApiServer, client: KubeClient) -> None:
        self.fake = fake
        self.client = client

    def get(self, kind: Kind, name: str, namespace: str = NS) -> dict[str, Any] | None:
        """A private copy of the stored object (the fake hands out its own)."""
        return copy.deepcopy(self.fake.get(kind.api_version, kind.plural, name, namespace))

    def names(self, kind: Kind, namespace: str = NS) -> list[str]:
        return sorted(
            str(item["metadata"]["name"])
            for item in self._list(kind, namespace)
        )

    def _list(self, kind: Kind, namespace: str) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            res = self.fake.api.registry.lookup(kind.group, kind.version, kind.plural)
            assert res is not None, f"{kind} is not served"
            items = self.fake.api.store.items(res.storage_key, namespace)
            return [copy.deepcopy(self.fake.api.registry.external(res, kind.version, item)) for item in items]

        return self.fake._on_loop(run)

    def create_booster(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.fake.create(copy.deepcopy(obj))

    async def replace_spec(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        """PUT a new spec like kubectl edit would, retrying when the reconciler's status write got in between."""
        for _ in range(10):
            live = self.get(MODEL_BOOSTER, name)
            assert live is not None
            try:
                return await self.client.replace(MODEL_BOOSTER, {**live, "spec": spec})
            except ApiError as error:
                if not error.conflict:
                    raise
        raise AssertionError(f"could not update ModelBooster {name}: conflicts")

    async def patch(self, kind: Kind, name: str, patch: Any, *, subresource: str | None = None,
                    manager: str = "test") -> dict[str, Any]:  # fmt: skip
        return await self.client.patch(kind, NS, name, patch, subresource=subresource, field_manager=manager)

    async def delete(self, kind: Kind, name: str) -> None:
        await self.client.delete(kind, NS, name)

    async def set_available(self, serving: str, *, replicas: int = 1, available: bool = True) -> None:
        """Play Kthena's ModelServing controller: report the serving's status."""
        condition = {
            "type": "Available",
            "status": "True" if available else "False",
            "reason": "Test",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        status = {"replicas": replicas, "availableReplicas": replicas if available else 0, "conditions": [condition]}
        await self.patch(
            MODEL_SERVING, serving, {"status": status}, subresource="status", manager="modelserving-controller"
        )

    def conditions(self, name: str = "m") -> dict[str, dict[str, Any]]:
        live = self.get(MODEL_BOOSTER, name) or {}
        return {c["type"]: c for c in (live.get("status") or {}).get("conditions") or ()}

    def condition(self, name: str, condition: str) -> str | None:
        found = self.conditions(name).get(condition)
        return None if found is None else str(found["status"])

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self._list(EVENT, NS) if reason is None or e.get("reason") == reason]

    def children(self) -> dict[str, list[str]]:
        kinds = (MODEL_SERVING, MODEL_SERVER, MODEL_ROUTE, AUTOSCALING_POLICY, AUTOSCALING_POLICY_BINDING)
        return {kind.kind: self.names(kind) for kind in kinds}


async def eventually(check: Callable[[], Any], *, within: float = 5.0, interval: float = 0.02,
                     message: str = "") -> Any:  # fmt: skip
    """Poll `check` (sync or async) until it returns something truthy; fail with its last value."""
    deadline = time.monotonic() + within
    last: Any = None
    while True:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return result
        last = result
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {within}s: {message or check} (last: {last!r})")
        await asyncio.sleep(interval)


async def quiet(seconds: float = 0.3) -> None:
    """Let in-flight events and reconciles run out."""
    await asyncio.sleep(seconds)
