"""The closed Inferno loop end to end through the fake API server: a ModelBooster with two backends and the
external-replicas opt-in, a Server per backend targeting its ModelServing, load from a scripted Prometheus
API on loopback, an Optimizer with a short period, Scale actuation — and the ModelBooster reconciler running
beside it all along.

Expected numbers are the optimiser's own (docs/design/inferno.md §4 with the §12 model: about 30 requests
per minute of 1024 tokens per G2 replica at ITL 40 ms / TTW 500 ms): the test asks `optimizer.optimize` for
the replicas of each load it injects, then checks what the controller did with them (docs/design/inferno.md
§13: clamp to the backend's bounds, scale up at once, down only after the stabilisation window, nothing on
missing data).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import random
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from aiohttp import web

from optimizer.optimize import optimize
from optimizer.system import system_from_resources
from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.controller import OptimizerReconciler
from reconciler.inferno.prometheus import PrometheusSettings
from reconciler.inferno.settings import InfernoSettings
from reconciler.inferno.wiring import register
from reconciler.modelbooster.kinds import AUTOSCALING_POLICY, MODEL_BOOSTER, MODEL_SERVING
from reconciler.runtime.kinds import Kind
from shared.api import inferno as api
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS
from shared.inferno_validation import parse_inferno_object
from shared.scaling_consent import ANNOTATION_SCALED_BY
from tests.chart.rbac import grants_for_service_account, is_allowed, request_from_http
from tests.chart.render import NAMESPACE as RELEASE_NAMESPACE
from tests.chart.render import render
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import FAST, NS, Cluster, RunningReconciler, backend, booster, eventually, quiet

ROOT = Path(__file__).resolve().parents[2]
INFERNO_CRDS = sorted((ROOT / "charts/modelbooster/charts/inferno-crds/crds").glob("inferno.platform.ai_*.yaml"))
SERVER = Kind(api.GROUP, api.VERSION, api.KIND_SERVER, api.PLURAL_SERVERS)
OPTIMIZER = Kind(api.GROUP, api.VERSION, api.KIND_OPTIMIZER, api.PLURAL_OPTIMIZERS)
PERIOD = 0.2  # seconds between runs
WINDOW = 1.5  # scale-down stabilisation window
LENGTH = 1024
BOUNDS = {"a": (1, 4), "b": (1, 6)}  # backend -> (minReplicas, maxReplicas)
MODELS = {"a": "llama", "b": "granite"}  # backend -> the model its Server serves (vLLM's model_name)


# --- a scripted Prometheus ------------------------------------------------------------------------------


@dataclass
class ScriptedPrometheus:
    """Answers the controller's two load queries from `load[model] = (requests/min, tokens/request)`, and the
    signal queries with no series."""

    load: dict[str, tuple[float, float]] = field(default_factory=dict)
    # model -> metric name (vllm:kv_cache_usage_perc, vllm:num_requests_waiting, ...) -> value
    signals: dict[str, dict[str, float]] = field(default_factory=dict)
    queries: int = 0
    url: str = ""
    runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        self.queries += 1
        query = request.query.get("query", "")
        model = re.search(r'model_name="([^"]*)"', query)
        rate, length = self.load.get(model.group(1) if model else "", (0.0, 0.0))
        if "request_success_total" in query:
            result = [{"metric": {}, "value": [time.time(), repr(float(rate))]}]
        elif "request_generation_tokens" in query:
            result = [{"metric": {}, "value": [time.time(), repr(float(length))]}]
        else:  # saturation and latency signals: those scripted, else none (the guardrail is blind)
            scripted = self.signals.get(model.group(1) if model else "", {})
            found = [value for name, value in scripted.items() if name in query]
            result = [{"metric": {}, "value": [time.time(), repr(float(found[0]))]}] if found else []
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/api/v1/query", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


# --- objects ----------------------------------------------------------------------------------------------


def inferno_obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api.API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec}


def inferno_objects(*, stabilization: str, period: float = PERIOD) -> list[dict[str, Any]]:
    perf = {"acc": "G2", "accCount": 1, "alpha": 17.15, "beta": 0.34, "maxBatchSize": 38, "atTokens": 512}
    targets = [{"model": model, "slo-itl": 40, "slo-ttw": 500} for model in MODELS.values()]
    objects = [
        inferno_obj("Accelerator", "g2", {"name": "G2", "type": "G2", "cost": 23}),
        *(inferno_obj("Model", model, {"name": model, "data": [perf]}) for model in MODELS.values()),
        inferno_obj("ServiceClass", "premium", {"name": "Premium", "priority": 1, "data": targets}),
    ]
    for backend_name, model in MODELS.items():
        spec = {
            "name": backend_name,
            "class": "Premium",
            "model": model,
            "currentAlloc": {"accelerator": "G2", "numReplicas": 0},
            "targetRef": {"kind": "ModelServing", "name": f"m-{backend_name}"},
            "actuation": "Scale",
            "scaleDownStabilization": stabilization,
        }
        objects.append(inferno_obj("Server", backend_name, spec))
    flags = {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    optimizer_spec = {"optimize": False, "interval": f"{int(period * 1000)}ms", "data": {"optimizer": flags}}
    objects.append(inferno_obj("Optimizer", "inferno", optimizer_spec))
    return objects


def decided(rate: float) -> int:
    """The optimiser's replicas for one Server at `rate` requests/min (what the controller must follow)."""
    parsed = [parse_inferno_object(obj) for obj in inferno_objects(stabilization="1s")]
    servers = []
    for obj in parsed:
        if isinstance(obj, api.Server):
            load = api.ServerLoad.model_validate({"arrivalRate": rate, "avgLength": LENGTH})
            current = obj.spec.current_alloc.model_copy(update={"load": load})  # type: ignore[union-attr]
            servers.append(obj.model_copy(update={"spec": obj.spec.model_copy(update={"current_alloc": current})}))
    system = system_from_resources(
        accelerators=[o for o in parsed if isinstance(o, api.Accelerator)],
        models=[o for o in parsed if isinstance(o, api.Model)],
        service_classes=[o for o in parsed if isinstance(o, api.ServiceClass)],
        servers=servers,
        capacities=[],
        flags=api.OptimizerSpec.model_validate(
            {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
        ),
    )
    return optimize(system).desired()["a"].num_replicas


def opted_in_booster() -> dict[str, Any]:
    backends = [backend(name, minReplicas=low, maxReplicas=high) for name, (low, high) in BOUNDS.items()]
    obj = booster("m", *backends)
    obj["metadata"]["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true", ANNOTATION_SCALED_BY: ",".join(MODELS)}
    return obj


# --- fixtures ---------------------------------------------------------------------------------------------


@dataclass
class Loop:
    cluster: Cluster
    reconciler: RunningReconciler
    prometheus: ScriptedPrometheus
    inferno: OptimizerReconciler | None = None

    def sample(self, name: str, **labels: str) -> float | None:
        return self.reconciler.metrics.registry.get_sample_value(name, labels)

    def replicas(self, backend_name: str) -> int | None:
        serving = self.cluster.get(MODEL_SERVING, f"m-{backend_name}")
        return None if serving is None else int(serving["spec"]["replicas"])

    def runs(self) -> float:
        return self.reconciler.metric("inferno_optimizations_total", result="success")

    def server(self, name: str) -> dict[str, Any]:
        found = self.cluster.get(SERVER, name)
        assert found is not None
        return found

    def condition(self, server: str, kind: str) -> dict[str, Any]:
        conditions = (self.server(server).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == kind), {})

    def scale_writes(self) -> list[str]:
        return [
            entry.name
            for entry in self.reconciler.writes()
            if entry.resource == "modelservings" and entry.subresource == "scale"
        ]

    def set_load(self, **rates: float) -> None:
        for backend_name, rate in rates.items():
            self.prometheus.load[MODELS[backend_name]] = (rate, float(LENGTH))


async def _play_modelserving_controller(cluster: Cluster, stop: asyncio.Event) -> None:
    """Kthena's ModelServing controller, as far as scale goes: status.replicas follows spec.replicas."""
    while not stop.is_set():
        for name in cluster.names(MODEL_SERVING):
            serving = cluster.get(MODEL_SERVING, name)
            if serving is None:
                continue
            wanted = serving["spec"].get("replicas", 1)
            if (serving.get("status") or {}).get("replicas") != wanted:
                await cluster.patch(MODEL_SERVING, name, {"status": {"replicas": wanted}}, subresource="status",
                                    manager="modelserving-controller")  # fmt: skip
        await asyncio.sleep(0.02)


@pytest.fixture
async def start_loop(fake: FakeApiServer, cluster: Cluster) -> AsyncIterator[Any]:
    for path in INFERNO_CRDS:
        fake.register_crd(yaml.safe_load(path.read_text()))
    prometheus = ScriptedPrometheus()
    await prometheus.start()
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    running: list[RunningReconciler] = []

    async def start(*, stabilization: str, period: float = PERIOD, **rates: float) -> Loop:
        loop_state = Loop(cluster, RunningReconciler(fake, FAST, "r1"), prometheus)
        loop_state.set_load(**rates)
        # Windows of a second or two: the operator's shortest window (a minute by default) is lifted.
        settings = InfernoSettings(
            backoff_base=0.02, backoff_max=0.2, prometheus=PrometheusSettings(url=prometheus.url, timeout=1.0),
            ceilings=Ceilings(min_stabilization=0),
        )  # fmt: skip
        loop_state.inferno = register(loop_state.reconciler.process.context, settings)
        cluster.create_booster(opted_in_booster())
        tasks.append(asyncio.create_task(_play_modelserving_controller(cluster, stop)))
        running.append(await loop_state.reconciler.start())
        # The Servers come once their targets exist: a run before that reports them not found (and says so in a
        # Warning event), which is not what these tests are about.
        await eventually(lambda: set(cluster.children()["ModelServing"]) >= {"m-a", "m-b"}, within=10)
        for obj in inferno_objects(stabilization=stabilization, period=period):
            fake.create(copy.deepcopy(obj))
        return loop_state

    yield start
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    for reconciler in running:
        await reconciler.stop()
    await prometheus.stop()


# --- tests ------------------------------------------------------------------------------------------------


async def test_load_steps_scale_the_backends_within_bounds_and_the_reconciler_keeps_out(start_loop: Any) -> None:
    loop: Loop = await start_loop(stabilization=f"{int(WINDOW * 1000)}ms", a=60, b=60)
    low = decided(60)
    assert low == 2  # docs/design/inferno.md §12: 60 requests/min of 1024 tokens need 2 x G2
    await eventually(lambda: loop.replicas("a") == low and loop.replicas("b") == low, within=10)
    # Created at minReplicas by the ModelBooster, then scaled by Inferno; no AutoscalingPolicy for an opt-in.
    assert loop.cluster.names(AUTOSCALING_POLICY) == []

    # Step up: a beyond its maxReplicas, b within bounds; both reached within two periods.
    high_a, high_b = decided(240), decided(150)
    assert high_a > BOUNDS["a"][1]
    assert BOUNDS["b"][0] < high_b <= BOUNDS["b"][1]
    runs_before = loop.runs()
    loop.set_load(a=240, b=150)
    await eventually(lambda: loop.replicas("a") == BOUNDS["a"][1] and loop.replicas("b") == high_b, within=10)
    assert loop.runs() - runs_before <= 2
    assert loop.server("a")["spec"]["desiredAlloc"]["numReplicas"] == high_a  # decided, then clamped to max
    assert loop.condition("a", "ScalingActive")["status"] == "True"

    # The ModelBooster reconciler, woken by an edit of the ModelBooster and by the ModelServings' changes,
    # never puts the replicas back to minReplicas.
    await loop.cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"touched": "yes"}}})
    await quiet(3 * PERIOD)
    assert (loop.replicas("a"), loop.replicas("b")) == (BOUNDS["a"][1], high_b)

    # Step down (b's traffic stops: decided 0, clamped to its minReplicas): nothing before the stabilisation
    # window has passed since the last high decision.
    assert decided(0) < BOUNDS["b"][0]
    stepped_down = time.monotonic()
    loop.set_load(a=60, b=0)
    await asyncio.sleep(WINDOW - 2 * PERIOD)
    assert (loop.replicas("a"), loop.replicas("b")) == (BOUNDS["a"][1], high_b)
    assert loop.condition("b", "ScalingActive")["reason"] == "ScaleDownStabilizing"
    await eventually(lambda: loop.replicas("a") == low and loop.replicas("b") == BOUNDS["b"][0], within=10)
    assert time.monotonic() - stepped_down >= WINDOW - PERIOD
    assert loop.server("b")["spec"]["desiredAlloc"]["numReplicas"] == decided(0)
    loop.set_load(b=60)
    await eventually(lambda: loop.replicas("b") == low, within=10)

    # Prometheus goes away mid-run: loads are kept, nothing is scaled, and it is said.
    scale_writes = loop.scale_writes()
    await loop.prometheus.stop()
    loop.set_load(a=300, b=300)
    await eventually(lambda: loop.condition("a", "LoadMeasured").get("status") == "False", within=10)
    runs_stopped = loop.runs()
    await eventually(lambda: loop.runs() >= runs_stopped + 3, within=10)
    assert (loop.replicas("a"), loop.replicas("b")) == (low, low)
    assert loop.scale_writes() == scale_writes
    measured = loop.condition("a", "LoadMeasured")
    assert measured["reason"] == "MetricsUnavailable"
    assert "keeping the last load" in measured["message"]
    assert loop.condition("a", "ScalingActive")["reason"] == "MetricsUnavailable"
    assert loop.server("a")["spec"]["currentAlloc"]["load"]["arrivalRate"] == 60
    assert [e["involvedObject"]["name"] for e in loop.cluster.events("LoadUnavailable")].count("a") == 1
    assert loop.reconciler.metric("inferno_load_stale", namespace=NS, server="a") == 1
    assert loop.reconciler.metric("inferno_load_measurement_failures_total", reason="unreachable") > 0
    optimizer = loop.cluster.get(OPTIMIZER, "inferno") or {}
    optimized = next(c for c in optimizer["status"]["conditions"] if c["type"] == "Optimized")
    assert "load not measured (last load kept): a, b" in optimized["message"]
    labels = {"namespace": NS, "server": "a", "target_kind": "ModelServing", "target_name": "m-a", "accelerator": "G2"}
    assert loop.reconciler.metric("inferno_desired_replicas", **labels) == low

    # Everything the loop asked of the API server, the chart's ClusterRole grants the reconciler.
    grants = grants_for_service_account(
        render().objects, service_account="mb-modelbooster-reconciler", namespace=RELEASE_NAMESPACE
    )
    requests = {
        request_from_http(entry.method, entry.path, urlencode(entry.query))
        for entry in loop.cluster.fake.requests.entries()
        if entry.user_agent == loop.reconciler.user_agent and entry.resource
    }
    assert any(request.resource == "modelservings/scale" for request in requests)
    assert [request for request in requests if not is_allowed(grants, request)] == []


async def test_a_noisy_constant_load_makes_at_most_one_change_per_ten_periods(start_loop: Any) -> None:
    # A window of 30 nominal periods: on a slow machine runs take longer than the period, and the window must
    # still span more than ten of them.
    period = 0.1
    loop: Loop = await start_loop(stabilization=f"{int(30 * period * 1000)}ms", period=period, a=60, b=30)
    await eventually(lambda: loop.replicas("a") == decided(60), within=10)
    rng = random.Random(23)
    first = loop.runs()
    decisions: list[int] = []
    # Around 65 requests/min the decision flickers between 2 and 3 replicas (±25 % noise, as a bursty load).
    while loop.runs() < first + 20:
        runs = loop.runs()
        loop.set_load(a=65 * (1 + rng.uniform(-0.25, 0.25)))
        await eventually(lambda: loop.runs() > runs, within=5)  # noqa: B023 - evaluated inside this iteration
        decisions.append(int(loop.server("a")["spec"]["desiredAlloc"]["numReplicas"]))
    periods = loop.runs() - first
    changes = sum(1 for before, after in itertools.pairwise(decisions) if before != after)
    assert changes >= 5, f"the load was not noisy enough to test anything: decisions {decisions}"
    scaled = [e for e in loop.cluster.events("Scaled") if e["involvedObject"]["name"] == "a"]
    changes_made = sum(int(e.get("count") or 1) for e in scaled) - 1  # the first brought it from 1 to 2
    assert changes_made <= periods / 10, f"{changes_made} scale changes in {periods} periods"


def test_decided_matches_the_worked_example() -> None:
    assert decided(60) == 2



async def test_runs_of_one_namespace_never_overlap(start_loop: Any, fake: FakeApiServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Two Optimizers with periods in one namespace: their runs take turns (each measures and scales the same
    Servers), and both keep their schedules."""
    from reconciler.inferno.solvers import Answer
    from reconciler.inferno.solvers import EmbeddedSolver as EmbeddedBackend

    running = 0
    most = 0
    original = EmbeddedBackend.run

    async def slow_run(self: EmbeddedBackend, system: Any) -> Answer:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            await asyncio.sleep(0.05)  # long enough that two unserialised runs would meet
            return await original(self, system)
        finally:
            running -= 1

    monkeypatch.setattr(EmbeddedBackend, "run", slow_run)
    second = inferno_objects(stabilization="1s")[-1]
    second["metadata"]["name"] = "second"
    fake.create(copy.deepcopy(second))
    loop: Loop = await start_loop(stabilization="1s", a=60, b=60)
    await eventually(lambda: loop.runs() >= 8, within=10)
    assert most == 1
    for name in ("inferno", "second"):
        assert ((loop.cluster.get(OPTIMIZER, name) or {}).get("status") or {}).get("lastRunTime")


async def test_another_accelerator_is_recommended_not_made(start_loop: Any, fake: FakeApiServer) -> None:
    """Backend b runs on A100 (its currentAlloc says so), where the model has no performance data: the optimiser
    places it on G2. Scale reports that and leaves b's replicas alone; a stays scaled."""
    fake.create(inferno_obj("Accelerator", "a100", {"name": "A100", "type": "A100", "cost": 40}))
    loop: Loop = await start_loop(stabilization="1s", a=60, b=150)
    await loop.cluster.patch(SERVER, "b", {"spec": {"currentAlloc": {"accelerator": "A100"}}})
    await eventually(lambda: loop.condition("b", "ScalingActive").get("reason") == "AcceleratorChangeRecommended")
    before = loop.replicas("b")
    await eventually(lambda: loop.replicas("a") == decided(60), within=10)
    runs = loop.runs()
    await eventually(lambda: loop.runs() >= runs + 3, within=10)
    assert loop.replicas("b") == before
    assert loop.server("b")["spec"]["desiredAlloc"]["accelerator"] == "G2"
    message = loop.condition("b", "ScalingActive")["message"]
    assert f"recommends {decided(150)} x G2 instead of A100" in message
    assert [e["involvedObject"]["name"] for e in loop.cluster.events("NotScaled")] == ["b"]


async def test_the_guardrail_overrules_a_saturated_decision_and_says_so(start_loop: Any) -> None:
    """a's pods report a KV cache 95 % full (the threshold is 80 %) while the optimiser, sized from the
    profile, is content with 2 replicas: Scale adds replicas up to the backend's maximum, and the Server says
    why (condition, one Warning event per new reason, metric, status). Once the cache empties, the decision
    stands again and the stabiliser brings the replicas back down."""
    loop: Loop = await start_loop(stabilization=f"{int(WINDOW * 1000)}ms", a=60, b=60)
    await eventually(lambda: loop.replicas("a") == decided(60), within=10)
    waiting = {"vllm:num_requests_waiting": 0.0, "vllm:num_requests_running": 20.0}
    loop.prometheus.signals[MODELS["a"]] = {"vllm:kv_cache_usage_perc": 0.95, **waiting}
    await eventually(lambda: loop.replicas("a") == BOUNDS["a"][1], within=10)
    assert loop.server("a")["spec"]["desiredAlloc"]["numReplicas"] == decided(60)  # the optimiser's word stands
    assert loop.replicas("b") == decided(60)  # b's pods report nothing: no override there
    await eventually(lambda: loop.condition("a", "SaturationOverride").get("reason") == "SaturatedAtMaximum")
    assert loop.condition("a", "SaturationOverride")["status"] == "True"
    reasons = [e["reason"] for e in loop.cluster.events("SaturationOverride") if e["involvedObject"]["name"] == "a"]
    assert reasons == ["SaturationOverride", "SaturationOverride"]  # Saturated, then SaturatedAtMaximum
    assert loop.reconciler.metric("inferno_saturation_overrides_total", reason="Saturated") >= 1
    saturation = loop.server("a")["status"]["saturation"]
    assert saturation["kvCacheUsage"] == 0.95
    assert saturation["pressure"] == pytest.approx(0.95 / 0.8, abs=0.01)
    assert loop.reconciler.metric("inferno_saturation_pressure", namespace=NS, server="a") == pytest.approx(
        0.95 / 0.8, abs=0.01
    )
    assert loop.condition("b", "SaturationOverride")["reason"] == "SignalsUnavailable"

    loop.prometheus.signals[MODELS["a"]] = {"vllm:kv_cache_usage_perc": 0.1, **waiting}
    await eventually(lambda: loop.condition("a", "SaturationOverride").get("status") == "False")
    assert loop.condition("a", "SaturationOverride")["reason"] == "NotOverridden"
    await eventually(lambda: loop.replicas("a") == decided(60), within=10)


async def test_what_the_loop_keeps_for_a_server_goes_with_it_and_the_rest_with_the_last_optimizer(
    start_loop: Any,
) -> None:
    """State with one owner: the run that finds a Server gone drops its stabiliser and its series; the reconcile
    that finds the namespace's last Optimizer gone drops what is left, with no event handler of its own."""
    loop: Loop = await start_loop(stabilization="1s", a=60, b=60)
    assert loop.inferno is not None
    stabilizers = loop.inferno.loop.actuator.stabilizers
    await eventually(lambda: len(stabilizers) == 2 and loop.sample("inferno_load_stale", namespace=NS, server="b") == 0,
                     within=10)  # fmt: skip
    runs = loop.runs()
    await loop.cluster.delete(SERVER, "b")
    await eventually(lambda: loop.runs() >= runs + 2, within=10)
    assert len(stabilizers) == 1
    assert loop.sample("inferno_load_stale", namespace=NS, server="b") is None
    assert loop.sample("inferno_load_stale", namespace=NS, server="a") == 0

    await loop.cluster.delete(OPTIMIZER, "inferno")
    await eventually(lambda: len(stabilizers) == 0, within=10)
    assert loop.sample("inferno_load_stale", namespace=NS, server="a") is None
    assert loop.sample("inferno_allocation_cost", optimizer_namespace=NS, optimizer="inferno") is None
