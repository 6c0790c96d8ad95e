"""The CRD check (reconciler/crdcheck): an outdated CRD served → a Warning log and Event, the
`modelbooster_crd_outdated` gauge at 1, and the process still ready; the current CRD → 0 and quiet."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from reconciler.api.kinds import CHILD_KINDS, INFERNO_KINDS, MODEL_BOOSTER
from reconciler.assembly import ReconcilerSettings, build
from reconciler.crdcheck.check import EVENT_REASON
from reconciler.crdcheck.settings import CrdCheckSettings
from reconciler.crdcheck.wiring import PEER as CRDCHECK
from reconciler.inferno.settings import InfernoSettings
from reconciler.inferno.wiring import PEER as INFERNO
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.peer import new_context
from reconciler.runtime.client import KubeClient
from reconciler.runtime.discovery import CRD
from reconciler.runtime.health import make_app
from reconciler.runtime.kinds import EVENT
from reconciler.runtime.manager import Manager, ManagerOptions
from reconciler.runtime.metrics import Metrics
from reconciler.settings import ProcessSettings
from shared.crd_digest import DIGEST_ANNOTATION
from shared.crds import CHILD_CRDS_DIRECTORY, KINDS, crds
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import eventually

MODELBOOSTERS = "modelboosters.workload.serving.volcano.sh"
CHILDREN = {kind.name for kind in KINDS if kind.chart_directory == CHILD_CRDS_DIRECTORY}


def _definitions(*, outdated: dict[str, str | None] | None = None) -> list[dict[str, Any]]:
    """Our CRDs; those named in `outdated` with that digest annotation instead (None: none, as before 0.2.0)."""
    result = []
    for generated in crds():
        definition = copy.deepcopy(generated)
        name = definition["metadata"]["name"]
        if outdated and name in outdated:
            replacement = outdated[name]
            if replacement is None:
                del definition["metadata"]["annotations"]
            else:
                definition["metadata"]["annotations"] = {DIGEST_ANNOTATION: replacement}
        result.append(definition)
    return result


@pytest.fixture
async def client(fake_apiserver_inloop: FakeApiServer) -> AsyncIterator[KubeClient]:
    client = KubeClient.for_configuration(fake_apiserver_inloop.aio_configuration(), user_agent="test")
    yield client
    await client.close()


async def _start(
    client: KubeClient, *, check_children: bool = True, inferno: bool = True
) -> tuple[Any, asyncio.Event, asyncio.Task[None]]:
    """The check alone, with the kinds the ModelBooster controller (and the Inferno controller) would watch."""
    manager = Manager(client, options=ManagerOptions(leader_elect=False, shutdown_timeout=1.0), metrics=Metrics())
    context = new_context(manager, ProcessSettings(leader_elect=False), version="9.9.9")
    context.discovery.follow((MODEL_BOOSTER, *CHILD_KINDS, *(INFERNO_KINDS if inferno else ())))
    check = CRDCHECK.register(context, CrdCheckSettings(check_children=check_children))
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    return (manager, check), stop, task


def _gauge(manager: Manager, crd: str) -> float | None:
    value = manager.metrics.registry.get_sample_value("modelbooster_crd_outdated", {"crd": crd})
    return value


async def test_an_outdated_crd_at_start_warns_counts_posts_an_event_and_stays_ready(
    fake_apiserver_inloop: FakeApiServer, client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    for definition in _definitions(outdated={MODELBOOSTERS: None}):
        fake_apiserver_inloop.register_crd(definition)
    (manager, _check), stop, task = await _start(client)
    try:
        with caplog.at_level(logging.WARNING, logger="reconciler.crdcheck.check"):
            await eventually(lambda: _gauge(manager, MODELBOOSTERS) == 1)
        assert {_gauge(manager, definition["metadata"]["name"]) for definition in crds()} == {0, 1}
        (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert warning.startswith(f"CustomResourceDefinition {MODELBOOSTERS} is not the one modelbooster 9.9.9")
        assert "no digest annotation" in warning
        assert "kubectl apply --server-side --force-conflicts" in warning

        async def events() -> list[dict[str, Any]]:
            listed = await client.list(EVENT, namespace="default")
            return [e for e in listed.items if e.get("reason") == EVENT_REASON]

        (event,) = await eventually(events)
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "CustomResourceDefinition"
        assert event["involvedObject"]["name"] == MODELBOOSTERS
        assert "namespace" not in event["involvedObject"]
        assert event["message"] == warning

        async with TestClient(TestServer(make_app(manager))) as http:
            assert (await http.get("/readyz")).status == 200
            metrics = await (await http.get("/metrics")).text()
        assert f'modelbooster_crd_outdated{{crd="{MODELBOOSTERS}"}} 1.0' in metrics
    finally:
        stop.set()
        await task


async def test_applying_the_current_crd_clears_the_signal_and_a_new_drift_raises_it(
    fake_apiserver_inloop: FakeApiServer, client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    for definition in _definitions(outdated={MODELBOOSTERS: "sha256:0123456789abcdef"}):
        fake_apiserver_inloop.register_crd(definition)
    (manager, _check), stop, task = await _start(client)
    try:
        await eventually(lambda: _gauge(manager, MODELBOOSTERS) == 1)
        (current,) = [d for d in crds() if d["metadata"]["name"] == MODELBOOSTERS]
        with caplog.at_level(logging.INFO, logger="reconciler.crdcheck.check"):
            stored = await client.get(CRD, None, MODELBOOSTERS)
            body = copy.deepcopy(current)
            body["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
            await client.replace(CRD, body)
            await eventually(lambda: _gauge(manager, MODELBOOSTERS) == 0)
        assert any("is current now" in r.getMessage() for r in caplog.records)
    finally:
        stop.set()
        await task


async def test_child_crds_are_not_judged_when_kthena_provides_them(
    fake_apiserver_inloop: FakeApiServer, client: KubeClient
) -> None:
    for definition in _definitions(outdated=dict.fromkeys(CHILDREN)):
        fake_apiserver_inloop.register_crd(definition)
    (manager, _check), stop, task = await _start(client, check_children=False)
    try:
        await eventually(lambda: _gauge(manager, MODELBOOSTERS) == 0)
        assert {_gauge(manager, name) for name in CHILDREN} == {None}
    finally:
        stop.set()
        await task


async def test_inferno_crds_are_not_judged_without_the_inferno_controller(
    fake_apiserver_inloop: FakeApiServer, client: KubeClient
) -> None:
    inferno = {kind.name for kind in KINDS if kind.group == "inferno.platform.ai"}
    for definition in _definitions(outdated=dict.fromkeys(inferno)):
        fake_apiserver_inloop.register_crd(definition)
    (manager, _check), stop, task = await _start(client, inferno=False)
    try:
        await eventually(lambda: _gauge(manager, MODELBOOSTERS) == 0)
        assert {_gauge(manager, name) for name in inferno} == {None}
    finally:
        stop.set()
        await task


@pytest.mark.parametrize("inferno", [True, False])
async def test_the_kinds_in_use_are_those_the_registered_peers_watch(client: KubeClient, inferno: bool) -> None:
    settings = ReconcilerSettings(
        process=ProcessSettings(leader_elect=False, metrics_port=0), inferno=InfernoSettings(enabled=inferno)
    )
    process = build(settings, client, Metrics(), peers=(MODELBOOSTER, INFERNO, CRDCHECK))
    in_use = process.context.kinds_in_use()
    assert {MODEL_BOOSTER, *CHILD_KINDS} <= in_use
    assert set(INFERNO_KINDS) & in_use == (set(INFERNO_KINDS) if inferno else set())
