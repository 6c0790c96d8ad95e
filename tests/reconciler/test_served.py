"""What the cluster serves (reconciler/runtime/discovery.py) and informers that follow it (served_kinds.py)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from reconciler.runtime.client import KubeClient
from reconciler.runtime.discovery import CRD, CrdDiscovery, ServedCrd
from reconciler.runtime.kind_informers import KindInformers
from reconciler.runtime.kinds import Kind
from reconciler.runtime.manager import Manager, ManagerOptions
from reconciler.runtime.metrics import Metrics
from tests.apiserver.widgets import WIDGET_CRD
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import eventually

WIDGET = Kind("example.fakeapi.io", "v1", "Widget", "widgets")
OLD_WIDGET = Kind("example.fakeapi.io", "v1beta1", "Widget", "widgets")


@pytest.fixture
async def manager(fake_apiserver_inloop: FakeApiServer) -> AsyncIterator[Manager]:
    fake_apiserver_inloop.create_namespace("ns")
    client = KubeClient.for_configuration(fake_apiserver_inloop.aio_configuration(), user_agent="test")
    manager = Manager(client, options=ManagerOptions(leader_elect=False, shutdown_timeout=1.0), metrics=Metrics())
    yield manager
    await client.close()


async def _run(manager: Manager) -> tuple[asyncio.Event, asyncio.Task[None]]:
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    await asyncio.sleep(0)
    return stop, task


async def _delete_crd(client: KubeClient, name: str) -> None:
    await client.delete(CRD, None, name)


async def test_served_resources_follow_crds_and_tell_subscribers(
    manager: Manager, fake_apiserver_inloop: FakeApiServer
) -> None:
    served = CrdDiscovery(manager, groups={"example.fakeapi.io"})
    changes: list[tuple[ServedCrd | None, ServedCrd | None]] = []
    served.subscribe(lambda old, new: changes.append((old, new)))
    stop, task = await _run(manager)
    try:
        await served.wait_synced()
        assert served.served(WIDGET) is None
        assert served.crds() == {}
        fake_apiserver_inloop.register_crd(copy.deepcopy(WIDGET_CRD))
        version = await eventually(lambda: served.served(WIDGET))
        assert version.name == "v1"
        assert version.subresources == frozenset({"status"})
        assert version.schema is not None
        assert "spec" in version.schema["properties"]
        crd = served.crd("example.fakeapi.io", "widgets")
        assert crd is not None
        assert crd.serving
        assert crd.kind == "Widget"
        assert crd.name == "widgets.example.fakeapi.io"
        assert crd.raw["spec"]["group"] == "example.fakeapi.io"
        assert "managedFields" not in crd.raw["metadata"]
        assert changes
        assert changes[0][0] is None
        assert changes[-1][1] is not None
        await _delete_crd(manager.client, "widgets.example.fakeapi.io")
        await eventually(lambda: served.crd("example.fakeapi.io", "widgets") is None)
        assert served.served(WIDGET) is None
        assert changes[-1][1] is None
    finally:
        stop.set()
        await task


async def test_crds_of_other_groups_are_kept_as_identity_only(
    manager: Manager, fake_apiserver_inloop: FakeApiServer
) -> None:
    served = CrdDiscovery(manager, groups={"other.example.com"})
    fake_apiserver_inloop.register_crd(copy.deepcopy(WIDGET_CRD))
    stop, task = await _run(manager)
    try:
        await served.wait_synced()
        crd = served.crd("example.fakeapi.io", "widgets")
        assert crd is not None
        assert crd.kind == "Widget"
        assert "versions" not in crd.raw["spec"]
    finally:
        stop.set()
        await task


async def test_an_informer_runs_only_while_its_kind_is_served(
    manager: Manager, fake_apiserver_inloop: FakeApiServer
) -> None:
    served = CrdDiscovery(manager, groups={"example.fakeapi.io"})
    kinds = KindInformers(manager, served, [WIDGET], make=manager.new_informer)
    seen: list[str] = []
    kinds.add_handler(lambda event, old, new: seen.append(event))
    announced: list[tuple[Kind, str]] = []
    kinds.on_change(lambda kind: announced.append((kind, kinds.state(kind))))
    stop, task = await _run(manager)
    try:
        await served.wait_synced()
        await asyncio.sleep(0.1)
        assert kinds.state(WIDGET) == "not served"
        assert kinds.get(WIDGET) is None
        assert manager.ready()  # nothing waits on a kind that is not served
        # No request for the kind that is not served: no informer retrying a 404.
        assert not [r for r in fake_apiserver_inloop.requests.entries() if r.resource == "widgets"]

        fake_apiserver_inloop.register_crd(copy.deepcopy(WIDGET_CRD))
        await eventually(lambda: kinds.get(WIDGET) is not None)
        informer = kinds.get(WIDGET)
        assert informer is not None
        assert announced == [(WIDGET, "served")]
        fake_apiserver_inloop.create(
            {
                "apiVersion": "example.fakeapi.io/v1",
                "kind": "Widget",
                "metadata": {"name": "w", "namespace": "ns"},
                "spec": {"size": "small"},
            }
        )
        await eventually(lambda: informer.get("ns", "w") is not None)
        assert "ADDED" in seen
        assert manager.ready()

        await _delete_crd(manager.client, "widgets.example.fakeapi.io")
        await eventually(lambda: kinds.state(WIDGET) == "not served")
        assert announced[-1] == (WIDGET, "not served")
        await eventually(lambda: informer not in manager.informers)
        assert manager.ready()
        assert manager.healthy()

        fake_apiserver_inloop.register_crd(copy.deepcopy(WIDGET_CRD))
        await eventually(lambda: kinds.get(WIDGET) is not None)
        again = kinds.get(WIDGET)
        assert again is not None
        assert again is not informer
        assert len(again) == 0
    finally:
        stop.set()
        await task


async def test_a_version_not_served_has_no_informer(manager: Manager, fake_apiserver_inloop: FakeApiServer) -> None:
    crd: dict[str, Any] = copy.deepcopy(WIDGET_CRD)
    for version in crd["spec"]["versions"]:
        if version["name"] == "v1beta1":
            version["served"] = False
    fake_apiserver_inloop.register_crd(crd)
    served = CrdDiscovery(manager, groups={"example.fakeapi.io"})
    kinds = KindInformers(manager, served, [WIDGET, OLD_WIDGET], make=manager.new_informer)
    stop, task = await _run(manager)
    try:
        await eventually(lambda: kinds.get(WIDGET) is not None)
        assert kinds.state(OLD_WIDGET) == "not served"
    finally:
        stop.set()
        await task
