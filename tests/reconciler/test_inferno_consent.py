"""The confused-deputy probe of the closed loop, replayed through the fake API server with the whole reconciler
running (docs/design/inferno.md §18): a Server written by someone who may not scale a Deployment names it, with
bounds 0..50,000 and a load typed by its author (no Prometheus). Nothing moves until the Deployment's owner
consents; then the operator's ceilings bound every decision — no higher than the ceiling, no further per decision
than the step, no lower than the floor — and once an HPA scales the Deployment too, Inferno keeps off it, saying
whose it is."""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.kinds import DEPLOYMENT, HORIZONTAL_POD_AUTOSCALER
from reconciler.inferno.settings import InfernoSettings
from reconciler.inferno.wiring import register
from reconciler.runtime.kinds import Kind
from shared.api import inferno as api
from shared.scaling_consent import ANNOTATION_SCALED_BY
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import FAST, NS, Cluster, RunningReconciler, eventually, quiet

ROOT = Path(__file__).resolve().parents[2]
INFERNO_CRDS = sorted((ROOT / "charts/modelbooster/charts/inferno-crds/crds").glob("inferno.platform.ai_*.yaml"))
SERVER = Kind(api.GROUP, api.VERSION, api.KIND_SERVER, api.PLURAL_SERVERS)
CEILINGS = Ceilings(max_replicas=20, min_replicas=1, max_step=4, max_step_percent=100, min_stabilization=0)


def inferno_obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api.API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec}


def objects(rate: float) -> list[dict[str, Any]]:
    perf = {"acc": "G2", "accCount": 1, "alpha": 17.15, "beta": 0.34, "maxBatchSize": 38, "atTokens": 512}
    server = {
        "name": "grab", "class": "Premium", "model": "llama",
        "currentAlloc": {"accelerator": "G2", "numReplicas": 3, "load": {"arrivalRate": rate, "avgLength": 1024}},
        "targetRef": {"kind": "Deployment", "name": "search"}, "actuation": "Scale",
        "minReplicas": 0, "maxReplicas": 50_000, "scaleDownStabilization": "0s",
    }  # fmt: skip
    flags = {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    return [
        inferno_obj("Accelerator", "g2", {"name": "G2", "type": "G2", "cost": 23}),
        inferno_obj("Model", "llama", {"name": "llama", "data": [perf]}),
        inferno_obj("ServiceClass", "premium", {"name": "Premium", "priority": 1,
                                                "data": [{"model": "llama", "slo-itl": 40, "slo-ttw": 500}]}),
        inferno_obj("Server", "grab", server),
        inferno_obj("Optimizer", "inferno", {"optimize": False, "interval": "200ms", "data": {"optimizer": flags}}),
    ]  # fmt: skip


def deployment() -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "search"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "search", "namespace": NS},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "search"}}, "template": template}}  # fmt: skip


async def _play_deployment_controller(cluster: Cluster, stop: asyncio.Event) -> None:
    """The Deployment controller, as far as scale goes: status.replicas follows spec.replicas."""
    while not stop.is_set():
        live = cluster.get(DEPLOYMENT, "search")
        if live is not None and (live.get("status") or {}).get("replicas") != live["spec"]["replicas"]:
            await cluster.patch(DEPLOYMENT, "search", {"status": {"replicas": live["spec"]["replicas"]}},
                                subresource="status", manager="deployment-controller")  # fmt: skip
        await asyncio.sleep(0.02)


@pytest.fixture
async def running(fake: FakeApiServer, cluster: Cluster) -> AsyncIterator[RunningReconciler]:
    for path in INFERNO_CRDS:
        fake.register_crd(yaml.safe_load(path.read_text()))
    fake.create(deployment())
    reconciler = RunningReconciler(fake, FAST, "r1")
    register(reconciler.process.context, InfernoSettings(ceilings=CEILINGS))
    stop = asyncio.Event()
    playing = asyncio.create_task(_play_deployment_controller(cluster, stop))
    await reconciler.start()
    try:
        yield reconciler
    finally:
        stop.set()
        await playing
        await reconciler.stop()


def replicas(cluster: Cluster) -> int:
    return int((cluster.get(DEPLOYMENT, "search") or {})["spec"]["replicas"])


def scaling(cluster: Cluster) -> dict[str, Any]:
    conditions = ((cluster.get(SERVER, "grab") or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "ScalingActive"), {})


def steps(cluster: Cluster) -> list[tuple[int, int]]:
    """(from, to) of every Scaled event on the Server, in order."""
    found = []
    for event in sorted(cluster.events("Scaled"), key=lambda e: e["metadata"]["creationTimestamp"]):
        match = re.search(r"from (\d+) to (\d+) replicas", event["message"])
        assert match is not None
        found.append((int(match.group(1)), int(match.group(2))))
    return found


async def test_a_server_without_consent_scales_nothing_then_ceilings_bound_what_consent_allows(
    fake: FakeApiServer, cluster: Cluster, running: RunningReconciler
) -> None:
    for obj in objects(rate=60_000):  # ~2,000 replicas' worth of load, typed by the Server's author
        fake.create(copy.deepcopy(obj))
    await eventually(lambda: scaling(cluster).get("reason") == "ConsentMissing", within=10)
    runs = running.metric("inferno_optimizations_total", result="success")
    await eventually(lambda: running.metric("inferno_optimizations_total", result="success") >= runs + 3, within=10)
    assert replicas(cluster) == 3
    assert not [w for w in running.writes() if w.resource == "deployments"]
    refusal = scaling(cluster)["message"]
    assert refusal == (f'Deployment search names no Server that may scale it; annotate Deployment search '
                       f'{ANNOTATION_SCALED_BY}: "grab" to let Server grab scale it')  # fmt: skip
    (warning,) = [e for e in cluster.events("NotScaled") if e["involvedObject"]["name"] == "grab"]
    assert (warning["type"], warning["message"]) == ("Warning", refusal)

    # The Deployment's owner consents: up to the operator's ceiling, never more than the step per decision.
    await cluster.patch(DEPLOYMENT, "search", {"metadata": {"annotations": {ANNOTATION_SCALED_BY: "grab"}}})
    await eventually(lambda: replicas(cluster) == CEILINGS.max_replicas, within=10)
    moves = steps(cluster)
    assert moves[0][0] == 3
    assert all(after - before <= max(CEILINGS.max_step, before) for before, after in moves)
    assert max(after for _, after in moves) == CEILINGS.max_replicas
    assert scaling(cluster)["status"] == "True"
    assert "operator ceiling 20" in scaling(cluster)["message"]

    # No traffic at all: the decision is 0 and the Server allows 0, the operator's floor does not.
    await cluster.patch(SERVER, "grab", {"spec": {"currentAlloc": {"load": {"arrivalRate": 0, "avgLength": 0}}}})
    await eventually(lambda: replicas(cluster) == CEILINGS.min_replicas, within=10)
    await quiet(0.6)
    assert replicas(cluster) == CEILINGS.min_replicas
    assert "operator floor 1" in scaling(cluster)["message"]

    # An HPA takes the Deployment over: Inferno keeps off it and says whose it is, whatever the load says.
    fake.create({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                 "metadata": {"name": "search", "namespace": NS},
                 "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "search"},
                          "minReplicas": 1, "maxReplicas": 5}})  # fmt: skip
    await cluster.patch(SERVER, "grab", {"spec": {"currentAlloc": {"load": {"arrivalRate": 60_000,
                                                                             "avgLength": 1024}}}})  # fmt: skip
    await eventually(lambda: scaling(cluster).get("reason") == "AutoscalerConflict", within=10)
    scaled = replicas(cluster)
    runs = running.metric("inferno_optimizations_total", result="success")
    await eventually(lambda: running.metric("inferno_optimizations_total", result="success") >= runs + 3, within=10)
    assert replicas(cluster) == scaled
    assert "also scaled by HorizontalPodAutoscaler search" in scaling(cluster)["message"]
    conflict = [e for e in cluster.events("NotScaled") if "HorizontalPodAutoscaler search" in e["message"]]
    assert [e["type"] for e in conflict] == ["Warning"]
    assert cluster.get(HORIZONTAL_POD_AUTOSCALER, "search") is not None
