"""An informer against the fake API server across watch ends: it hears every change, in the end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from reconciler.runtime.client import KubeClient
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import CONFIG_MAP
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, eventually


@pytest.fixture
async def client(fake: FakeApiServer) -> AsyncIterator[KubeClient]:
    api = KubeClient.for_configuration(fake.aio_configuration(), user_agent="informer-test")
    yield api
    await api.close()


def config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}}


async def test_changes_queued_when_a_watch_times_out_reach_the_cache(client: KubeClient, fake: FakeApiServer) -> None:
    """A watch whose `timeoutSeconds` ends it while changes wait to be sent (a stalled or slow stream): the
    informer re-watches from the last resourceVersion it saw and gets them. (The fake used to end such a
    stream with a bookmark past them, and the informer never heard of them until a re-list.)"""
    informer = Informer(client, CONFIG_MAP, namespaces=[NS], watch_timeout=1, read_timeout=5)
    running = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 5)
        await client.create(CONFIG_MAP, config_map("before"))
        await eventually(lambda: informer.get(NS, "before"), message="the first change is heard")
        fake.stall_watches()
        await client.create(CONFIG_MAP, config_map("during"))
        await asyncio.sleep(1.2)  # the stalled watch reaches its timeout
        fake.stall_watches(stalled=False)
        await eventually(lambda: informer.get(NS, "during"), within=4, message="the change made during the stall")
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
