"""The Inferno controller against the fake API server (and the real optimizer REST app on loopback).

Expected values are written from docs/design/inferno.md: the worked example of §12 (legacy model: granite
on G2 at 60 req/min of 1024 tokens, ITL 40 ms, TTW 500 ms → 2 x G2, maxBatch 19, cost 46, itl 21.16437 ms,
wait 102.09766 ms) and the run protocol of §8.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpServer

from optimizer.optimize import optimize
from optimizer.rest.app import make_app
from optimizer.rest.state import STATE, OptimizerState
from optimizer.system import Allocation, allocation_to_resource, system_from_resources
from reconciler.assembly import ReconcilerProcess, ReconcilerSettings, build
from reconciler.inferno.kinds import ACCELERATOR, CAPACITY, MODEL, OPTIMIZER, SERVER, SERVICE_CLASS
from reconciler.inferno.kinds import INFERNO_INPUT_KINDS as INPUT_KINDS
from reconciler.inferno.remote import RemoteSettings
from reconciler.inferno.settings import (
    InfernoSettings,
    InfernoSettingsError,
    add_arguments,
    settings_from_args,
)
from reconciler.inferno.wiring import PEER as INFERNO_PEER
from reconciler.runtime.client import KubeClient
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.metrics import Metrics
from reconciler.settings import ProcessSettings
from shared.api import inferno as api
from shared.inferno_validation import parse_inferno_object
from tests.fakeapi.reqlog import LoggedRequest
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, Cluster, eventually, quiet

ROOT = Path(__file__).resolve().parents[2]
INFERNO_CRDS = sorted((ROOT / "charts/modelbooster/charts/inferno-crds/crds").glob("inferno.platform.ai_*.yaml"))
EXAMPLES = sorted((ROOT / "examples/inferno").glob("*.yaml"))
FAST = InfernoSettings(backoff_base=0.02, backoff_max=0.2)

SERVER_NAME = "Premium-granite_13b"  # spec.name: the key of the optimizer's answer
LOAD = {"arrivalRate": 60, "avgLength": 1024, "arrivalCOV": 0, "serviceCOV": 0}


def obj(kind: Kind, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    metadata = {"name": name, "namespace": NS}
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, "spec": spec}


def worked_example(*, optimize_now: bool = False, current_accelerator: str = "") -> list[dict[str, Any]]:
    """The worked example of docs/design/inferno.md §12 as custom resources."""
    g2 = {"name": "G2", "type": "G2", "multiplicity": 1, "memSize": 24, "memBW": 300, "cost": 23}
    perf = {"acc": "G2", "accCount": 1, "alpha": 17.15, "beta": 0.34, "maxBatchSize": 38, "atTokens": 512}
    premium = {"name": "Premium", "priority": 1, "data": [{"model": "granite", "slo-itl": 40, "slo-ttw": 500}]}
    current = {"accelerator": current_accelerator, "numReplicas": 0, "load": {"arrivalRate": 60, "avgLength": 1024}}
    server = {"name": SERVER_NAME, "class": "Premium", "model": "granite", "currentAlloc": current}
    return [
        obj(ACCELERATOR, "g2", g2),
        obj(MODEL, "granite", {"name": "granite", "data": [perf]}),
        obj(SERVICE_CLASS, "premium", premium),
        obj(SERVER, "premium-granite", server),
        obj(CAPACITY, "cluster", {"count": [{"type": "G2", "count": 8}]}),
        optimizer(optimize_now=optimize_now),
    ]


def optimizer(*, optimize_now: bool, name: str = "inferno") -> dict[str, Any]:
    flags = {"unlimited": False, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    return obj(OPTIMIZER, name, {"optimize": optimize_now, "data": {"optimizer": flags}})


def assert_worked_example(desired: dict[str, Any] | None) -> None:
    assert desired is not None
    assert {k: desired[k] for k in ("accelerator", "numReplicas", "maxBatch", "cost", "load")} == {
        "accelerator": "G2",
        "numReplicas": 2,
        "maxBatch": 19,
        "cost": 46,
        "load": LOAD,
    }
    assert desired["itlAverage"] == pytest.approx(21.16437, rel=6e-6)
    assert desired["waitAverage"] == pytest.approx(102.09766, abs=0.01)


# --- fixtures --------------------------------------------------------------------------------------------


@pytest.fixture
async def inferno_api(fake_apiserver_inloop: FakeApiServer) -> FakeApiServer:
    """The fake with the six Inferno CRDs of the chart and namespace `ns`."""
    for path in INFERNO_CRDS:
        fake_apiserver_inloop.register_crd(yaml.safe_load(path.read_text()))
    fake_apiserver_inloop.create_namespace(NS)
    return fake_apiserver_inloop


@pytest.fixture
async def cluster(inferno_api: FakeApiServer) -> AsyncIterator[Cluster]:
    client = KubeClient.for_configuration(inferno_api.aio_configuration(), user_agent="test-user")
    try:
        yield Cluster(inferno_api, client)
    finally:
        await client.close()


class RunningInferno:
    """A reconciler process with only the Inferno controller, registered as the assembly registers every peer."""

    def __init__(self, fake: FakeApiServer, settings: InfernoSettings) -> None:
        self.fake = fake
        self.user_agent = "modelbooster-reconciler (inferno-test)"
        self.metrics = Metrics()
        self.client = KubeClient.for_configuration(
            fake.aio_configuration(), user_agent=self.user_agent, metrics=self.metrics
        )
        process = ProcessSettings(
            leader_elect=False, identity="inferno-test", resync_period=0, shutdown_timeout=2.0, watch_timeout=30
        )
        built = build(
            ReconcilerSettings(process=process, inferno=settings), self.client, self.metrics, peers=(INFERNO_PEER,)
        )
        self.manager = built.manager
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> RunningInferno:
        self._task = asyncio.create_task(self.manager.run(self._stop))
        await asyncio.wait_for(self.manager.wait_synced(), 10)
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._stop.set()
            await asyncio.wait_for(self._task, 10)
            self._task = None
        await self.client.close()

    def writes(self) -> list[LoggedRequest]:
        return [e for e in self.fake.requests.writes() if e.user_agent == self.user_agent]

    def write_summary(self) -> list[tuple[str, str, str]]:
        """(verb, resource[/subresource], name) of every write; events by resource only."""
        summary = []
        for e in self.writes():
            resource = e.resource + (f"/{e.subresource}" if e.subresource else "")
            summary.append((e.verb, resource, "" if e.resource == "events" else e.name))
        return sorted(summary)

    def metric(self, name: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value

    async def idle(self) -> None:
        controller = self.manager.controllers[0]
        await eventually(lambda: len(controller.queue) == 0 and not controller.queue.processing(), message="idle")
        await quiet(0.2)


@pytest.fixture
async def start_inferno(inferno_api: FakeApiServer) -> AsyncIterator[Callable[..., Awaitable[RunningInferno]]]:
    started: list[RunningInferno] = []

    async def start(settings: InfernoSettings = FAST) -> RunningInferno:
        running = RunningInferno(inferno_api, settings)
        started.append(running)
        return await running.start()

    yield start
    for running in started:
        await running.stop()


@pytest.fixture
def free_port() -> int:
    """A loopback port nobody listens on (until a test starts something there)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def create_all(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    for item in objects:
        cluster.fake.create(copy.deepcopy(item))


def optimizer_of(cluster: Cluster, name: str = "inferno") -> dict[str, Any]:
    live = cluster.get(OPTIMIZER, name)
    assert live is not None
    return live


def optimized_condition(cluster: Cluster, name: str = "inferno") -> dict[str, Any] | None:
    for condition in (optimizer_of(cluster, name).get("status") or {}).get("conditions") or ():
        if condition["type"] == "Optimized":
            return dict(condition)
    return None


def desired_alloc(cluster: Cluster, name: str = "premium-granite") -> dict[str, Any] | None:
    server = cluster.get(SERVER, name)
    assert server is not None
    desired: dict[str, Any] | None = server["spec"].get("desiredAlloc")
    return desired


async def request_run(cluster: Cluster, name: str = "inferno") -> None:
    await cluster.patch(OPTIMIZER, name, {"spec": {"optimize": True}})


async def run_finished(cluster: Cluster, name: str = "inferno") -> None:
    await eventually(lambda: optimizer_of(cluster, name)["spec"]["optimize"] is False, message="optimize reset")


# --- the embedded optimizer ------------------------------------------------------------------------------


async def test_optimize_flag_round_trip_writes_desired_alloc_status_and_event(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    create_all(cluster, worked_example())
    inferno = await start_inferno()
    await inferno.idle()
    # optimize: false (and input edits while it is false) do nothing at all.
    await cluster.patch(SERVER, "premium-granite", {"spec": {"model": "granite"}, "metadata": {"labels": {"a": "b"}}})
    await cluster.patch(CAPACITY, "cluster", {"spec": {"count": [{"type": "G2", "count": 9}]}})
    await inferno.idle()
    assert inferno.writes() == []
    assert desired_alloc(cluster) is None

    before = datetime.now(UTC).replace(microsecond=0)
    await request_run(cluster)
    await run_finished(cluster)
    after = datetime.now(UTC)

    assert_worked_example(desired_alloc(cluster))
    live = optimizer_of(cluster)
    assert live["metadata"]["generation"] == 3  # created (1), optimize true (2), optimize reset (3)
    status = live["status"]
    assert status["done"] is True
    assert status["totalCost"] == 46
    assert status["unallocatedServers"] == []
    assert before <= datetime.strptime(status["lastRunTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) <= after
    assert 0 <= status["lastRunDurationSeconds"] < (after - before + timedelta(seconds=1)).total_seconds()
    condition = optimized_condition(cluster)
    assert condition is not None
    assert {k: v for k, v in condition.items() if k != "lastTransitionTime"} == {
        "type": "Optimized",
        "status": "True",
        "reason": "OptimizationSucceeded",
        "message": "1 servers allocated, 0 unallocated, total cost 46 cents/h (embedded greedy)",
        "observedGeneration": 2,
    }
    await inferno.idle()
    events = cluster.events("Optimized")
    assert [(e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in events] == [
        ("Normal", "Optimizer", "inferno")
    ]
    assert events[0]["message"] == condition["message"]
    # One desiredAlloc patch, the status, then the reset, and the event: nothing else.
    assert inferno.write_summary() == [
        ("create", "events", ""),
        ("patch", "optimizers", "inferno"),
        ("patch", "optimizers/status", "inferno"),
        ("patch", "servers", "premium-granite"),
    ]
    assert inferno.metric("inferno_optimizations_total", result="success") == 1
    assert inferno.metric("inferno_optimizations_total", result="error") == 0
    assert inferno.metric("inferno_optimization_duration_seconds_count") == 1
    assert inferno.metric("inferno_desired_alloc_writes_total") == 1
    assert inferno.metric("inferno_allocation_cost", optimizer_namespace=NS, optimizer="inferno") == 46


async def test_a_deleted_optimizer_leaves_no_cost_series(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    create_all(cluster, worked_example())
    inferno = await start_inferno()
    await request_run(cluster)
    await run_finished(cluster)
    labels = {"optimizer_namespace": NS, "optimizer": "inferno"}
    assert inferno.metrics.registry.get_sample_value("inferno_allocation_cost", labels) == 46
    await cluster.delete(OPTIMIZER, "inferno")
    await eventually(
        lambda: inferno.metrics.registry.get_sample_value("inferno_allocation_cost", labels) is None,
        message="cost series dropped",
    )


async def test_desired_alloc_on_each_server_is_what_optimize_computes(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    documents = [doc for path in EXAMPLES for doc in yaml.safe_load_all(path.read_text()) if doc]
    for doc in documents:
        doc["metadata"]["namespace"] = NS
    create_all(cluster, documents)
    # The same objects through the library, as a user of `reconciler.inferno` would run them.
    typed: dict[str, list[Any]] = {}
    for doc in documents:
        typed.setdefault(doc["kind"], []).append(parse_inferno_object(doc))
    solution = optimize(
        system_from_resources(
            accelerators=typed["Accelerator"],
            models=typed["Model"],
            service_classes=typed["ServiceClass"],
            servers=typed["Server"],
            capacities=typed["Capacity"],
            flags=typed["Optimizer"][0].spec.data.optimizer,
        )
    )
    assert len(solution.allocations) == 2  # both examples fit: the comparison below is not vacuous

    await start_inferno()
    await request_run(cluster)
    await run_finished(cluster)

    for server in typed["Server"]:
        expected = allocation_to_resource(solution.allocations[server.spec.name].allocation)
        assert desired_alloc(cluster, str(server.metadata.name)) == api.dump_wire(expected), server.spec.name
    status = optimizer_of(cluster)["status"]
    assert status["totalCost"] == pytest.approx(solution.total_cost)
    assert status["unallocatedServers"] == list(solution.unallocated)


async def test_a_rerun_with_unchanged_inputs_writes_no_server(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    create_all(cluster, worked_example(optimize_now=True))
    inferno = await start_inferno()
    await run_finished(cluster)
    first = desired_alloc(cluster)
    await inferno.idle()
    cluster.fake.requests.clear()

    await request_run(cluster)
    await run_finished(cluster)
    await inferno.idle()

    assert desired_alloc(cluster) == first
    assert [w for w in inferno.write_summary() if w[1] != "events"] == [
        ("patch", "optimizers", "inferno"),
        ("patch", "optimizers/status", "inferno"),
    ]
    condition = optimized_condition(cluster)
    assert condition is not None
    # Created pending (1), reset (2), asked again (3): the condition is about the second request.
    assert (condition["status"], condition["observedGeneration"]) == ("True", 3)
    assert inferno.metric("inferno_optimizations_total", result="success") == 2
    assert inferno.metric("inferno_desired_alloc_writes_total") == 1


async def test_an_unplaceable_server_gets_an_empty_allocation_and_is_listed(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    objects = worked_example(optimize_now=True)
    # 17 ms per token cannot be met on G2: alone, a request gets a token every 17.15 + 0.34 ms.
    objects[2]["spec"]["data"][0]["slo-itl"] = 17
    create_all(cluster, objects)
    await start_inferno()
    await run_finished(cluster)

    assert desired_alloc(cluster) == {
        "accelerator": "",
        "numReplicas": 0,
        "maxBatch": 0,
        "cost": 0,
        "itlAverage": 0,
        "waitAverage": 0,
        "load": LOAD,
    }
    status = optimizer_of(cluster)["status"]
    assert (status["done"], status["totalCost"], status["unallocatedServers"]) == (True, 0, [SERVER_NAME])
    condition = optimized_condition(cluster)
    assert condition is not None
    assert condition["message"] == (
        f"0 servers allocated, 1 unallocated, total cost 0 cents/h (embedded greedy); unallocated: {SERVER_NAME}"
    )


async def test_invalid_inputs_are_reported_without_server_writes_until_fixed(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    create_all(cluster, worked_example(optimize_now=True, current_accelerator="H100"))
    inferno = await start_inferno()
    message = "Server premium-granite: spec.currentAlloc.accelerator: unknown accelerator 'H100' (known: G2)"
    await eventually(lambda: optimized_condition(cluster) is not None, message="condition")
    await inferno.idle()

    condition = optimized_condition(cluster)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == ("False", "InvalidInput", message)
    live = optimizer_of(cluster)
    assert live["status"]["done"] is False
    assert live["spec"]["optimize"] is True  # still pending: fixing the objects runs it
    assert desired_alloc(cluster) is None
    assert [(e["type"], e["message"]) for e in cluster.events("InvalidInput")] == [("Warning", message)]
    assert inferno.write_summary() == [("create", "events", ""), ("patch", "optimizers/status", "inferno")]
    # Retrying cannot help: one attempt, no backoff loop.
    assert inferno.metric("inferno_optimizations_total", result="invalid") == 1
    assert inferno.metric("controller_runtime_terminal_reconcile_errors_total", controller="inferno") == 1

    await cluster.patch(SERVER, "premium-granite", {"spec": {"currentAlloc": {"accelerator": "G2"}}})
    await run_finished(cluster)
    assert_worked_example(desired_alloc(cluster))
    condition = optimized_condition(cluster)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "OptimizationSucceeded")
    assert optimizer_of(cluster)["status"]["done"] is True


@pytest.mark.parametrize("failing", ["optimizers/status", "optimizers"])
async def test_a_run_cut_short_after_the_servers_runs_again_without_rewriting_them(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]], failing: str
) -> None:
    # A crash after desiredAlloc, before the status or before the reset: the request is still pending (the
    # reset comes last), so the run happens again, and its Server writes are no-ops.
    cluster.fake.faults.fail_next(1, verb="patch", resource=failing, status=500)
    create_all(cluster, worked_example(optimize_now=True))
    inferno = await start_inferno()
    await run_finished(cluster)
    await inferno.idle()

    assert_worked_example(desired_alloc(cluster))
    status = optimizer_of(cluster)["status"]
    assert (status["done"], status["totalCost"]) == (True, 46)
    assert len([w for w in inferno.writes() if w.resource == "servers"]) == 1
    resource, _, subresource = failing.partition("/")
    attempts = [w for w in inferno.writes() if w.resource == resource and w.subresource == subresource]
    assert [w.status for w in attempts] == [500, 200]


async def test_a_runs_metrics_are_in_place_before_the_reset(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    """Whoever sees `spec.optimize` reset and scrapes sees that run: the metrics come before the reset, so even a
    reset that keeps failing leaves the run's cost and count published."""
    cluster.fake.faults.fail_next(None, verb="patch", resource="optimizers", status=500)
    create_all(cluster, worked_example(optimize_now=True))
    inferno = await start_inferno()
    await eventually(lambda: [w.status for w in inferno.writes() if w.resource == "optimizers" and not w.subresource],
                     message="the reset tried")  # fmt: skip
    labels = {"optimizer_namespace": NS, "optimizer": "inferno"}
    assert inferno.metrics.registry.get_sample_value("inferno_allocation_cost", labels) == 46
    assert inferno.metric("inferno_optimizations_total", result="success") >= 1
    assert optimizer_of(cluster)["spec"]["optimize"] is True  # still pending: the run happens again


async def test_a_failed_server_write_is_reported_and_retried(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]]
) -> None:
    cluster.fake.faults.fail_next(2, verb="patch", resource="servers", status=500, message="etcd is sad")
    create_all(cluster, worked_example(optimize_now=True))
    inferno = await start_inferno()
    await run_finished(cluster)
    await inferno.idle()

    assert_worked_example(desired_alloc(cluster))
    warnings = cluster.events("WriteFailed")
    assert len(warnings) == 1  # the same failure twice is one event, counted
    assert warnings[0]["count"] == 2
    assert warnings[0]["message"].startswith("writing desiredAlloc of Server Premium-granite_13b failed: 500")
    assert "etcd is sad" in warnings[0]["message"]
    condition = optimized_condition(cluster)
    assert condition is not None
    assert condition["status"] == "True"
    assert inferno.metric("inferno_optimizations_total", result="error") == 2
    assert inferno.metric("inferno_optimizations_total", result="success") == 1


# --- a remote optimizer ----------------------------------------------------------------------------------


def remote(port: int, *, stateless: bool) -> InfernoSettings:
    return InfernoSettings(
        backoff_base=0.02,
        backoff_max=0.2,
        remote=RemoteSettings(host="127.0.0.1", port=port, stateless=stateless, timeout=5.0),
    )


def route_calls(registry: CollectorRegistry, method: str, route: str) -> float:
    total = 0.0
    for code in ("200", "400", "404", "500"):
        total += (
            registry.get_sample_value(
                "inferno_optimizer_http_requests_total", {"method": method, "route": route, "code": code}
            )
            or 0.0
        )
    return total


def remote_writes(registry: CollectorRegistry) -> float:
    """Requests that change a stateful optimizer's system (everything but the GET /get... reads)."""
    total = 0.0
    for metric in registry.collect():
        for sample in metric.samples:
            route = sample.labels.get("route", "")
            if sample.name == "inferno_optimizer_http_requests_total" and not route.startswith("/get"):
                total += sample.value
    return total


async def test_remote_stateless_posts_the_system_to_optimize_one(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]], aiohttp_server: AiohttpServer
) -> None:
    registry = CollectorRegistry()
    app = make_app(registry=registry)
    server = await aiohttp_server(app)
    create_all(cluster, worked_example(optimize_now=True))
    inferno = await start_inferno(remote(int(server.port or 0), stateless=True))
    await run_finished(cluster)

    assert_worked_example(desired_alloc(cluster))
    condition = optimized_condition(cluster)
    assert condition is not None
    assert condition["message"] == "1 servers allocated, 0 unallocated, total cost 46 cents/h (remote stateless)"
    assert route_calls(registry, "POST", "/optimizeOne") == 1
    # The stateless optimizer keeps the system it was sent: it is the namespace's.
    held = app[STATE].system
    assert (sorted(held.accelerators), sorted(held.servers)) == (["G2"], [SERVER_NAME])
    assert held.capacity == {"G2": 8}
    assert inferno.metric("inferno_remote_requests_total", method="POST", endpoint="/optimizeOne", code="200") == 1
    # Stateless mode mirrors nothing and marks nothing active (as the reference).
    assert (cluster.get(SERVER, "premium-granite") or {}).get("status") is None


async def test_remote_stateful_mirrors_every_change_then_optimizes(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]], aiohttp_server: AiohttpServer
) -> None:
    registry = CollectorRegistry()
    app = make_app(stateful=True, registry=registry)
    server = await aiohttp_server(app)
    state: OptimizerState = app[STATE]
    create_all(cluster, worked_example())
    inferno = await start_inferno(remote(int(server.port or 0), stateless=False))

    # Mirrored before any run is asked for, each object marked active.
    await eventually(lambda: SERVER_NAME in state.system.servers, message="server mirrored")
    await inferno.idle()
    held = state.system
    assert sorted(held.accelerators) == ["G2"]
    assert held.accelerators["G2"].cost == 23
    assert sorted(held.models["granite"]) == ["G2"]
    assert held.models["granite"]["G2"].alpha == 17.15
    target = held.service_classes["Premium"].target_for("granite")
    assert (held.service_classes["Premium"].priority, target is not None) == (1, True)
    assert target is not None
    assert (target.slo_itl, target.slo_ttw, target.slo_tps) == (40, 500, 0)
    assert held.servers[SERVER_NAME].current.load.arrival_rate == 60
    assert held.capacity == {"G2": 8}
    mirrored = [(ACCELERATOR, "g2"), (MODEL, "granite"), (SERVICE_CLASS, "premium"), (SERVER, "premium-granite")]
    for kind, name in [*mirrored, (CAPACITY, "cluster")]:
        assert (cluster.get(kind, name) or {}).get("status") == {"active": True}, kind.kind
    assert route_calls(registry, "POST", "/optimize") == 0
    assert route_calls(registry, "POST", "/addServiceClassModelTargets") == 1  # the v0.4+ endpoint
    assert route_calls(registry, "POST", "/addServiceClassModelTarget") == 0  # not the reference's singular
    # A mirror with nothing new reads the optimizer's state and writes nothing.
    writes, reads = remote_writes(registry), route_calls(registry, "GET", "/getServers")
    cluster.fake.create(optimizer(optimize_now=False, name="another"))
    await eventually(lambda: route_calls(registry, "GET", "/getServers") > reads, message="another mirror pass")
    await inferno.idle()
    assert remote_writes(registry) == writes

    await request_run(cluster)
    await run_finished(cluster)
    assert_worked_example(desired_alloc(cluster))
    condition = optimized_condition(cluster)
    assert condition is not None
    assert condition["message"] == "1 servers allocated, 0 unallocated, total cost 46 cents/h (remote stateful)"
    assert route_calls(registry, "POST", "/optimize") == 1
    assert route_calls(registry, "POST", "/optimizeOne") == 0

    # Later changes are mirrored too: a new accelerator, an edited target, a deleted Capacity.
    a100 = obj(ACCELERATOR, "a100", {"name": "A100", "type": "A100", "multiplicity": 1, "cost": 40})
    cluster.fake.create(a100)
    await cluster.patch(SERVICE_CLASS, "premium", {"spec": {"data": [{"model": "granite", "slo-itl": 50}]}})
    await cluster.delete(CAPACITY, "cluster")
    await eventually(lambda: sorted(state.system.accelerators) == ["A100", "G2"], message="A100 mirrored")
    await eventually(lambda: state.system.capacity == {}, message="capacity removed")
    await eventually(
        lambda: state.system.service_classes["Premium"].targets[0].slo_itl == 50, message="target mirrored"
    )
    assert state.system.service_classes["Premium"].targets[0].slo_ttw == 0
    await eventually(lambda: (cluster.get(ACCELERATOR, "a100") or {}).get("status") == {"active": True})


async def test_an_unreachable_optimizer_is_reported_and_retried_with_backoff(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]], free_port: int
) -> None:
    create_all(cluster, worked_example(optimize_now=True))
    inferno = await start_inferno(remote(free_port, stateless=True))
    await eventually(lambda: inferno.metric("inferno_optimizations_total", result="error") >= 3, message="retries")

    condition = optimized_condition(cluster)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "OptimizerUnavailable")
    assert condition["message"].startswith(f"POST http://127.0.0.1:{free_port}/optimizeOne: ClientConnectorError")
    assert condition["message"].endswith("(retrying)")
    live = optimizer_of(cluster)
    assert (live["spec"]["optimize"], live["status"]["done"]) == (True, False)
    assert desired_alloc(cluster) is None
    # The same failure again and again is one status write, and one event with a count.
    assert [w for w in inferno.write_summary() if w[1] != "events"] == [("patch", "optimizers/status", "inferno")]
    assert [e["type"] for e in cluster.events("OptimizerUnavailable")] == ["Warning"]
    assert inferno.metric("inferno_remote_requests_total", method="POST", endpoint="/optimizeOne", code="error") >= 3

    # The optimizer comes up: the next retry succeeds.
    runner = web.AppRunner(make_app())
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", free_port).start()
        await run_finished(cluster)
        assert_worked_example(desired_alloc(cluster))
        condition = optimized_condition(cluster)
        assert condition is not None
        assert (condition["status"], condition["reason"]) == ("True", "OptimizationSucceeded")
    finally:
        await runner.cleanup()


async def test_a_stateless_optimizer_in_stateful_mode_is_reported_with_a_hint(
    cluster: Cluster, start_inferno: Callable[..., Awaitable[RunningInferno]], aiohttp_server: AiohttpServer
) -> None:
    server = await aiohttp_server(make_app())  # started without -F: no stateful endpoints
    create_all(cluster, worked_example(optimize_now=True))
    inferno = await start_inferno(remote(int(server.port or 0), stateless=False))
    await eventually(lambda: inferno.metric("inferno_optimizations_total", result="error") >= 2, message="retries")

    condition = optimized_condition(cluster)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "OptimizerUnavailable")
    assert condition["message"] == (
        f"POST http://127.0.0.1:{server.port}/addAccelerator: HTTP 404: 404: Not Found (no such endpoint: is "
        "INFERNO_HOST:INFERNO_PORT an Inferno optimizer, started with -F for stateful mode?) (retrying)"
    )
    assert desired_alloc(cluster) is None


@pytest.mark.parametrize("where", ["embedded", "remote"])
async def test_an_optimisation_error_is_final_until_something_changes(
    cluster: Cluster,
    start_inferno: Callable[..., Awaitable[RunningInferno]],
    aiohttp_server: AiohttpServer,
    where: str,
) -> None:
    objects = worked_example(optimize_now=True)
    objects[4]["spec"]["count"][0]["count"] = 1  # the server needs 2 x G2
    objects[5]["spec"]["data"]["optimizer"]["milpSolver"] = True
    create_all(cluster, objects)
    settings, prefix = FAST, ""
    if where == "remote":
        server = await aiohttp_server(make_app())
        settings = remote(int(server.port or 0), stateless=True)
        prefix = f"POST http://127.0.0.1:{server.port}/optimizeOne: HTTP 404: "
    inferno = await start_inferno(settings)
    await eventually(lambda: optimized_condition(cluster) is not None, message="condition")
    await inferno.idle()

    condition = optimized_condition(cluster)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "OptimizationFailed",
        prefix + "optimization error: MILP single assignment is infeasible: the capacity cannot host the servers "
        "(single assignment must place every server)",
    )
    assert inferno.metric("inferno_optimizations_total", result="error") == 1
    assert inferno.metric("controller_runtime_terminal_reconcile_errors_total", controller="inferno") == 1
    assert desired_alloc(cluster) is None

    await cluster.patch(CAPACITY, "cluster", {"spec": {"count": [{"type": "G2", "count": 2}]}})
    await run_finished(cluster)
    assert_worked_example(desired_alloc(cluster))


# --- settings --------------------------------------------------------------------------------------------


def parse(argv: list[str], environ: dict[str, str]) -> InfernoSettings:
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ)
    return settings_from_args(parser.parse_args(argv), environ)


def test_settings_default_to_an_embedded_optimizer_on_the_reconcilers_namespaces() -> None:
    settings = parse([], {})
    assert (settings.enabled, settings.namespaces, settings.remote) == (True, (), None)  # (): the process's
    assert settings.mode == "embedded"
    assert parse(["--inferno-namespaces", "c, d"], {}).namespaces == ("c", "d")
    env = {"MODELBOOSTER_RECONCILER_INFERNO_NAMESPACES": "e", "MODELBOOSTER_RECONCILER_INFERNO": "false"}
    assert (parse([], env).namespaces, parse([], env).enabled) == (("e",), False)
    assert parse(["--inferno"], env).enabled is True


def test_settings_select_a_remote_optimizer_from_the_reference_variables() -> None:
    settings = parse([], {"INFERNO_HOST": "optimizer.inferno.svc", "INFERNO_PORT": "80"})
    assert settings.remote == RemoteSettings(host="optimizer.inferno.svc", port=80, stateless=True, timeout=60.0)
    assert settings.mode == "remote stateless at http://optimizer.inferno.svc:80"
    only_port = parse(["--inferno-timeout", "5"], {"INFERNO_PORT": "3302", "INFERNO_STATELESS": "false"})
    assert only_port.remote == RemoteSettings(host="localhost", port=3302, stateless=False, timeout=5.0)
    assert parse([], {"INFERNO_HOST": "::1", "INFERNO_STATELESS": "T"}).mode == "remote stateless at http://[::1]:8080"
    assert parse(["--no-inferno"], {"INFERNO_HOST": "x"}).remote is None


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"INFERNO_STATELESS": "yes"}, "INFERNO_STATELESS='yes': must be true or false (1, t, true, 0, f, false)"),
        ({"INFERNO_PORT": "http"}, "INFERNO_PORT='http': not a port number"),
        (
            {"INFERNO_PORT": "70000"},
            "INFERNO_HOST/INFERNO_PORT: the remote optimizer's port must be 1..65535, got 70000",
        ),
    ],
)
def test_bad_settings_are_refused_with_their_name(environ: dict[str, str], message: str) -> None:
    with pytest.raises(InfernoSettingsError) as raised:
        parse([], environ)
    assert str(raised.value) == message


def test_a_bad_environment_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse([], {"MODELBOOSTER_RECONCILER_INFERNO_TIMEOUT": "0"})
    assert "MODELBOOSTER_RECONCILER_INFERNO_TIMEOUT: '0': must be positive" in capsys.readouterr().err


def _inferno_process(client: KubeClient, process: ProcessSettings, inferno: InfernoSettings) -> ReconcilerProcess:
    settings = ReconcilerSettings(process=process, inferno=inferno)
    return build(settings, client, Metrics(), peers=(INFERNO_PEER,))


def _own_informers(process: ReconcilerProcess) -> list[Informer]:
    return [informer for informer in process.manager.informers if informer is not process.discovery.informer]


async def test_disabled_registers_nothing(inferno_api: FakeApiServer) -> None:
    client = KubeClient.for_configuration(inferno_api.aio_configuration())
    try:
        disabled = _inferno_process(client, ProcessSettings(leader_elect=False), InfernoSettings(enabled=False))
        assert (disabled.manager.controllers, _own_informers(disabled)) == ([], [])
        assert disabled.registered == {"inferno": None}
        enabled = _inferno_process(client, ProcessSettings(leader_elect=False), InfernoSettings())
        assert [c.name for c in enabled.manager.controllers] == ["inferno"]
        assert sorted(i.kind.plural for i in _own_informers(enabled)) == sorted(
            [k.plural for k in INPUT_KINDS] + ["optimizers"]
        )
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("watched", "inferno", "expected"),
    [((), (), [None]), (("a", "b"), (), ["a", "b"]), (("a", "b"), ("b",), ["b"])],
)
async def test_inferno_watches_the_process_namespaces_unless_its_own_list_narrows_them(
    inferno_api: FakeApiServer, watched: tuple[str, ...], inferno: tuple[str, ...], expected: list[str | None]
) -> None:
    client = KubeClient.for_configuration(inferno_api.aio_configuration())
    try:
        process = ProcessSettings(leader_elect=False, namespaces=watched)
        built = _inferno_process(client, process, InfernoSettings(namespaces=inferno))
        assert {tuple(informer._scopes) for informer in _own_informers(built)} == {tuple(expected)}
    finally:
        await client.close()


async def test_inferno_writes_under_the_process_field_manager_with_its_own_suffix(
    inferno_api: FakeApiServer,
) -> None:
    client = KubeClient.for_configuration(inferno_api.aio_configuration())
    try:
        default = _inferno_process(client, ProcessSettings(leader_elect=False), InfernoSettings())
        assert default.registered["inferno"].field_manager == "modelbooster-inferno"
        long_name = ProcessSettings(leader_elect=False, field_manager="x" * 128)
        renamed = _inferno_process(client, long_name, InfernoSettings())
        manager = renamed.registered["inferno"].field_manager
        assert (len(manager), manager.endswith("-inferno")) == (128, True)
        assert renamed.registered["inferno"].recorder is renamed.context.recorder
    finally:
        await client.close()


def test_an_empty_allocation_is_the_api_models_no_allocation() -> None:
    # What an unplaced Server receives: accelerator "" is "no allocation" in shared.api.inferno.
    assert api.dump_wire(allocation_to_resource(Allocation())) == {
        "accelerator": "",
        "numReplicas": 0,
        "maxBatch": 0,
        "cost": 0.0,
        "itlAverage": 0.0,
        "waitAverage": 0.0,
        "load": {"arrivalRate": 0.0, "avgLength": 0, "arrivalCOV": 0.0, "serviceCOV": 0.0},
    }
