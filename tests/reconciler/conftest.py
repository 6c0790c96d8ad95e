"""Fixtures for reconciler tests against the fake API server (served on the test's event loop)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from reconciler.runtime.client import KubeClient
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import FAST, NS, Cluster, RunningReconciler, crd_documents, overridden


@pytest.fixture
async def fake(fake_apiserver_inloop: FakeApiServer) -> FakeApiServer:
    """The fake with the ModelBooster and child CRDs registered and namespace `ns`."""
    for document in crd_documents():
        fake_apiserver_inloop.register_crd(copy.deepcopy(document))
    fake_apiserver_inloop.create_namespace(NS)
    return fake_apiserver_inloop


@pytest.fixture
async def cluster(fake: FakeApiServer) -> AsyncIterator[Cluster]:
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="test-user")
    try:
        yield Cluster(fake, client)
    finally:
        await client.close()


@pytest.fixture
async def start_reconciler(fake: FakeApiServer) -> AsyncIterator[Callable[..., Awaitable[RunningReconciler]]]:
    """`await start_reconciler(name="r1", **settings)` starts one; all are stopped at the end of the test."""
    started: list[RunningReconciler] = []

    async def start(name: str = "r1", **overrides: Any) -> RunningReconciler:
        running = RunningReconciler(fake, overridden(FAST, **overrides), name)
        started.append(running)
        return await running.start()

    yield start
    for running in started:
        await running.stop()


@pytest.fixture
async def reconciler(start_reconciler: Callable[..., Awaitable[RunningReconciler]]) -> RunningReconciler:
    return await start_reconciler()
