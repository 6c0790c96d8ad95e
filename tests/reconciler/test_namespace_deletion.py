"""A namespace being deleted is terminal (docs/design/reconciler.md §4): its content goes kind by kind, children
before their ModelBoosters, and the reconciler creates nothing, writes no Failed status and logs one line."""

from __future__ import annotations

import logging

import pytest

from reconciler.modelbooster.kinds import MODEL_BOOSTER
from reconciler.runtime.kinds import NAMESPACE
from tests.fakeapi.app import ServerConfig
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, Cluster, RunningReconciler, backend, booster, eventually, quiet


@pytest.fixture
def fake_apiserver_config() -> ServerConfig:
    # The namespace controller empties one kind every 0.2 s, in (group, plural) order: the ModelRoutes and
    # ModelServers (networking group) go first, then ModelBoosters, then ModelServings.
    return ServerConfig(namespace_content_pace=0.2)


async def test_deleting_a_namespace_with_ten_model_boosters_makes_no_creates_and_no_failed_status(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler, caplog: pytest.LogCaptureFixture
) -> None:
    names = [f"m{i}" for i in range(10)]
    for name in names:
        cluster.create_booster(booster(name, backend("a")))
    await eventually(lambda: all(cluster.condition(n, "Initialized") == "True" for n in names), within=10.0)
    await quiet(0.3)
    fake.requests.clear()
    caplog.clear()
    caplog.set_level(logging.INFO)

    await cluster.client.delete(NAMESPACE, None, NS)
    await eventually(lambda: fake.get("v1", "namespaces", NS) is None, within=10.0, message="namespace gone")
    await quiet(0.3)

    writes = reconciler.writes()
    assert [e for e in writes if e.verb == "create"] == []
    status_writes = [e for e in writes if e.resource == "modelboosters" and e.subresource == "status"]
    assert not any("Failed" in str(e.body) and '"True"' in str(e.body) for e in status_writes), status_writes
    assert status_writes == []
    lines = [r for r in caplog.records if "is being deleted" in r.getMessage()]
    assert len(lines) == 1
    assert [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("reconciler")] == []
    assert cluster.names(MODEL_BOOSTER) == []
