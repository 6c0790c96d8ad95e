"""An API outage is ridden quietly (docs/design/reconciler.md §13): failed Event posts are counted and logged
once, reconciles and informers failing for the outage log once each, the informers are back within seconds of
the server, and convergence afterwards makes no redundant writes."""

from __future__ import annotations

import logging

import pytest

from reconciler.modelbooster.kinds import MODEL_SERVING
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually, quiet


async def test_an_outage_makes_a_few_log_lines_and_converges_without_redundant_writes(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.create_booster(booster("first", backend("a")))  # the reconciler knows what is served and works
    await eventually(lambda: cluster.condition("first", "Initialized") == "True")
    caplog.set_level(logging.INFO)
    caplog.clear()
    fake.requests.clear()
    outage = fake.faults.reset_next(None)  # every new connection is cut, as when the server is down
    names = [f"m{i}" for i in range(5)]
    for name in names:  # seen through the watches already open; every write they need fails
        fake.create(booster(name, backend("a")))
    await eventually(lambda: outage.hits >= 50, message="writes failing")
    fake.close_watches(abort=True)  # and now the watches break too
    await quiet(1.5)
    informers = len(reconciler.manager.informers)
    fake.faults.remove(outage)

    await eventually(lambda: all(cluster.condition(n, "Initialized") == "True" for n in names), within=8.0)
    await quiet(0.3)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("reconciler")]
    by_logger = {name: sum(1 for r in warnings if r.name == name) for name in {r.name for r in warnings}}
    assert by_logger.get("reconciler.runtime.events", 0) <= 1, by_logger
    assert by_logger.get("reconciler.runtime.controller", 0) == 1, by_logger
    assert by_logger.get("reconciler.runtime.informer", 0) <= informers, by_logger
    assert any("reconciling works again" in r.getMessage() for r in caplog.records)
    # Unavailability is not the user's to fix: no Failed status and no ApplyFailed event for it.
    assert cluster.events("ApplyFailed") == []
    assert not any('"Failed", "status": "True"' in str(e.body).replace("'", '"') for e in reconciler.writes()
                   if e.subresource == "status")  # fmt: skip
    # Each child was created once: nothing was answered 409 or written twice after the outage (the cut
    # requests are logged with status 0).
    creates = [e for e in reconciler.writes() if e.verb == "create" and e.resource == "modelservings"]
    assert sorted(e.status for e in creates if e.status) == [201] * len(names)
    assert sorted(cluster.names(MODEL_SERVING)) == sorted(f"{n}-a" for n in ["first", *names])
