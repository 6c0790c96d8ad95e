"""Inferno reads each engine's own series, in a cluster, through a real Prometheus (shared/engines/,
reconciler/inferno/targets.py, docs/design/inferno.md §13).

The fake API server runs the reconciler with the Inferno controller; a Server scales a ModelServing of its own
(it names the Server in its consent annotation); fake engine pods, as many as the ModelServing's replicas say
(the test plays Kthena's ModelServing controller), export exactly their engine table's series and labels
(tests/engines/) and serve what replicas with the true performance would report (tests/inferno_plant.py); a
real Prometheus scrapes them with the labels the chart's PodMonitor adds. The engine is the `inferenceEngine`
of the ModelServer named like the target; without one, vLLM.

- vLLM 0.33.0 (only today's names), vLLM before 0.11 (only the old names), SGLang 0.5.23: a step in load is
  measured, the optimiser's replicas for it reach `desiredAlloc` and the ModelServing, and
  `status.performance` takes observations with a measured ITL;
- SGLang with a profile half as fast as the truth: the guardrail overrides on `sglang:token_usage` and
  `sglang:num_queue_reqs`.

Prometheus comes from Debian's package (see test_prometheus_load.py): skipped without it, failed in CI.
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.load import LoadQueries
from reconciler.inferno.prometheus import PrometheusSettings
from reconciler.inferno.settings import InfernoSettings
from reconciler.inferno.wiring import register
from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.runtime.kinds import Kind
from shared.api import inferno as api
from shared.scaling_consent import ANNOTATION_SCALED_BY
from tests.engines import sglang_0_5_23, vllm_0_33_0, vllm_pre_0_11
from tests.engines.table import EngineTable
from tests.fakeapi.server import FakeApiServer
from tests.inferno_plant import Truth
from tests.reconciler.harness import FAST, NS, Cluster, RunningReconciler, eventually
from tests.reconciler.test_autoscaler_prometheus import (
    MAX_BATCH,
    PROFILE,
    Fleet,
    Pods,
    decide,
    pods,  # noqa: F401 - the fixture: fake engine pods
)
from tests.reconciler.test_pd_actuation import inferno_obj
from tests.reconciler.test_prometheus_load import running_prometheus, static_scrape, wait_ready

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE: Final = ROOT / "examples/backend-autoscaling.yaml"
INFERNO_CRDS = sorted((ROOT / "charts/modelbooster/charts/inferno-crds/crds").glob("inferno.platform.ai_*.yaml"))
SERVER = Kind(api.GROUP, api.VERSION, api.KIND_SERVER, api.PLURAL_SERVERS)
MODEL: Final = "llama"  # the Inferno Model, and the served model name the pods report
TARGET: Final = "solo"
PERIOD: Final = "1000ms"
WINDOW: Final = "1s"
LENGTH: Final = 512
MAX_REPLICAS: Final = 12
CEILINGS = Ceilings(max_replicas=50, min_replicas=0, max_step=20, max_step_percent=100, min_stabilization=0)
TABLES: Final = {
    "vllm-0.33.0": vllm_0_33_0.TABLE,
    "vllm-pre-0.11": vllm_pre_0_11.TABLE,
    "sglang-0.5.23": sglang_0_5_23.TABLE,
}


def rendered(kind: str) -> dict[str, Any]:
    """The `kind` child `modelbooster render` makes of the example: its spec, under a metadata of our own."""
    done = subprocess.run([sys.executable, "-m", "modelbooster", "render", "-f", str(EXAMPLE), "-o", "json"],
                          cwd=ROOT, capture_output=True, text=True, check=True)  # fmt: skip
    (found,) = [obj for obj in json.loads(done.stdout)["items"] if obj["kind"] == kind]
    return {"apiVersion": found["apiVersion"], "kind": kind, "spec": found["spec"],
            "metadata": {"name": TARGET, "namespace": NS}}  # fmt: skip


def target_objects(table: EngineTable) -> list[dict[str, Any]]:
    """The ModelServing the Server scales (one replica, consenting), and for an engine other than vLLM the
    ModelServer that says so."""
    serving = rendered("ModelServing")
    serving["metadata"]["annotations"] = {ANNOTATION_SCALED_BY: "s"}
    serving["spec"]["replicas"] = 1
    if table.engine == "vLLM":
        return [serving]  # no ModelServer: vLLM, the default
    server = rendered("ModelServer")
    server["spec"]["inferenceEngine"] = table.engine
    return [serving, server]


def inferno_objects() -> list[dict[str, Any]]:
    """The Inferno objects of one Server scaling the target: a G2 Model with the profile, SLOs the optimiser sizes
    for as `decide` does, a one-second Optimizer period."""
    perf = {"acc": "G2", "accCount": 1, "alpha": PROFILE.alpha, "beta": PROFILE.beta, "maxBatchSize": MAX_BATCH,
            "atTokens": 512}  # fmt: skip
    flags = {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    specs: dict[tuple[str, str], dict[str, Any]] = {
        ("Accelerator", "g2"): {"name": "G2", "type": "G2", "cost": 23},
        ("Model", MODEL): {"name": MODEL, "data": [perf]},
        ("ServiceClass", "premium"): {"name": "Premium", "priority": 1,
                                      "data": [{"model": MODEL, "slo-itl": 80, "slo-ttw": 2000}]},
        ("Server", "s"): {
            "name": "s", "class": "Premium", "model": MODEL,
            "currentAlloc": {"accelerator": "G2", "numReplicas": 1, "load": {"arrivalRate": 0, "avgLength": 0}},
            "targetRef": {"kind": "ModelServing", "name": TARGET}, "actuation": "Scale",
            "scaleDownStabilization": "0s", "minReplicas": 1, "maxReplicas": MAX_REPLICAS,
        },
        ("Optimizer", "inferno"): {"optimize": False, "interval": PERIOD, "data": {"optimizer": flags}},
    }  # fmt: skip
    return [inferno_obj(kind, name, spec) for (kind, name), spec in specs.items()]


@contextmanager
def prometheus(tmp_path: Path, addresses: list[str]) -> Iterator[str]:
    """A real Prometheus scraping the pods, with the labels the chart's PodMonitor gives engine series."""
    labels = {"namespace": NS, "modelserving": TARGET}
    with running_prometheus(tmp_path, static_scrape("engines", addresses, labels, interval="100ms")) as url:
        yield url


class Player:
    """Kthena's ModelServing controller, as far as the pods go: as many pods run as the ModelServing's replicas
    say, serving `rate_rpm` with the true performance."""

    def __init__(self, cluster: Cluster, fleet: Fleet, truth: Truth) -> None:
        self.cluster, self.fleet, self.truth = cluster, fleet, truth
        self.rate_rpm = 60.0

    def replicas(self) -> int:
        return int((self.cluster.get(MODEL_SERVING, TARGET) or {})["spec"]["replicas"])

    async def run(self, stop: asyncio.Event) -> None:
        reported = None
        while not stop.is_set():
            replicas = self.replicas()
            self.fleet.serve(truth=self.truth, rate_rpm=self.rate_rpm, length=LENGTH, replicas=replicas)
            if replicas != reported:  # the replicas running, which the estimator divides the batch by
                await self.cluster.set_available(TARGET, replicas=replicas)
                reported = replicas
            await asyncio.sleep(0.05)


def server_status(cluster: Cluster) -> dict[str, Any]:
    return dict((cluster.get(SERVER, "s") or {}).get("status") or {})


def condition(cluster: Cluster, kind: str) -> dict[str, Any]:
    return next((c for c in server_status(cluster).get("conditions") or () if c["type"] == kind), {})


@asynccontextmanager
async def running_loop(
    fake: FakeApiServer, cluster: Cluster, tmp_path: Path, pods: Pods, *, table: EngineTable, truth: Truth  # noqa: F811
) -> AsyncIterator[Player]:
    """The target, the engine pods behind a real Prometheus, the reconciler with Inferno, and the player."""
    fleet = await pods.fleet(model=MODEL, table=table)
    with prometheus(tmp_path, pods.addresses) as url:
        await wait_ready(url)
        for path in INFERNO_CRDS:
            fake.register_crd(yaml.safe_load(path.read_text()))
        for obj in target_objects(table):
            fake.create(obj)
        reconciler = RunningReconciler(fake, FAST, "r1")
        settings = InfernoSettings(
            ceilings=CEILINGS, prometheus=PrometheusSettings(url=url, timeout=2.0),
            load_queries=LoadQueries(window=WINDOW),
        )  # fmt: skip
        register(reconciler.process.context, settings)
        await reconciler.start()
        stop = asyncio.Event()
        player = Player(cluster, fleet, truth)
        playing = asyncio.create_task(player.run(stop))
        try:
            for obj in inferno_objects():
                fake.create(copy.deepcopy(obj))
            yield player
        finally:
            stop.set()
            await playing
            await reconciler.stop()


@pytest.mark.parametrize("engine", list(TABLES))
async def test_a_load_step_scales_the_target_and_the_itl_is_measured_from_the_engines_own_series(
    fake: FakeApiServer, cluster: Cluster, tmp_path: Path, pods: Pods, engine: str  # noqa: F811
) -> None:
    table = TABLES[engine]
    truth = Truth(alpha=PROFILE.alpha, beta=PROFILE.beta, batch=MAX_BATCH * 512 // LENGTH)
    async with running_loop(fake, cluster, tmp_path, pods, table=table, truth=truth) as player:

        def settled(rate: float) -> dict[str, Any] | None:
            """The status once a period measured `rate` and the target holds the optimiser's replicas for it."""
            status = server_status(cluster)
            desired = ((cluster.get(SERVER, "s") or {}).get("spec") or {}).get("desiredAlloc") or {}
            measured = ((cluster.get(SERVER, "s") or {}).get("spec") or {}).get("currentAlloc", {}).get("load", {})
            wanted = decide(rate, LENGTH, PROFILE, player.replicas())
            at_rate = abs(measured.get("arrivalRate", 0) / rate - 1) < 0.1
            if at_rate and desired.get("numReplicas") == wanted == player.replicas():
                return status
            return None

        await eventually(lambda: settled(60.0), within=60, message=f"{engine}: 60 rpm, {server_status(cluster)}")
        low = player.replicas()
        player.rate_rpm = 400.0
        await eventually(lambda: settled(400.0), within=60, message=f"{engine}: 400 rpm, {server_status(cluster)}")
        assert player.replicas() > low
        assert condition(cluster, "LoadMeasured").get("reason") == "Measured", server_status(cluster)
        # The ITL the pods report, observed by the estimator through the engine's own series: with the true
        # performance the profile's, a period's measured ITL is the one predicted at its batch.
        def observed() -> dict[str, Any] | None:
            performance = server_status(cluster).get("performance") or {}
            seen = performance.get("observations", 0) >= 2 and "measuredItl" in performance
            return performance if seen and abs(performance["drift"]) <= 0.25 else None

        performance = await eventually(observed, within=20, message=f"{engine}: {server_status(cluster)}")
        assert performance["measuredItl"] > PROFILE.alpha, performance
        assert "measuredTtft" in performance, performance


async def test_the_guardrail_fires_on_sglangs_token_usage_and_queue(
    fake: FakeApiServer, cluster: Cluster, tmp_path: Path, pods: Pods  # noqa: F811
) -> None:
    """The profile says twice the speed the pods have: the optimiser's replicas saturate them, and the guardrail
    adds replicas on what SGLang reports."""
    truth = Truth(alpha=2 * PROFILE.alpha, beta=2 * PROFILE.beta, batch=MAX_BATCH * 512 // LENGTH)
    async with running_loop(fake, cluster, tmp_path, pods, table=sglang_0_5_23.TABLE, truth=truth) as player:
        player.rate_rpm = 300.0

        def overridden() -> dict[str, Any] | None:
            found = condition(cluster, "SaturationOverride")
            return found if found.get("status") == "True" else None

        override = await eventually(overridden, within=60, message=f"no override: {server_status(cluster)}")
        assert override["reason"] in ("Saturated", "SaturatedAtMaximum"), override
        saturation = server_status(cluster)["saturation"]
        # What the guard saw is SGLang's: the pool's token usage and the queue, as the pods export them.
        assert saturation["kvCacheUsage"] > 0, saturation
        assert saturation.get("waiting") is not None, saturation
        await eventually(lambda: player.replicas() > decide(300.0, LENGTH, PROFILE, 1), within=30,
                         message=f"replicas {player.replicas()}: {server_status(cluster)}")  # fmt: skip
