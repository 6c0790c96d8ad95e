"""CPU of one period of Inferno's closed loop for 100 Servers: queries + optimise + writes.

Setup: the fake API server (`python -m tests.fakeapi`) and a scripted Prometheus API (answering the two load
queries per Server) each run in their own process, so their CPU is not counted; this process runs the Inferno
controller as `modelbooster reconciler` wires it (a Manager with informers, the embedded optimizer, Prometheus
settings). 50 ModelBoosters with the external-replicas opt-in and 2 backends each own the 100 ModelServings;
each Server targets one, with `actuation: Scale`; one Optimizer runs every `--period` seconds, unlimited.

Two phases of `--periods` runs each:
- steady: a constant load; each period measures (100 scale reads, 200 queries), optimises and writes nothing;
- changing: every Server's load alternates between two levels each period (scale-down window 0 s), so each
  period writes all 100 `currentAlloc`s, 100 `desiredAlloc`s, 100 `/scale`s, 100 statuses and 100 events.
The figure is this process's CPU time (all threads: the optimiser runs in a worker thread) per run, and the
run's wall time from the controller's own histogram.

Usage: python bench/inferno_loop_bench.py [--servers 100] [--periods 5] [--period 3]
Writes bench/results/inferno_loop.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import web  # noqa: E402

from reconciler.assembly import ReconcilerSettings, build  # noqa: E402
from reconciler.inferno.ceilings import Ceilings  # noqa: E402
from reconciler.inferno.prometheus import PrometheusSettings  # noqa: E402
from reconciler.inferno.settings import InfernoSettings  # noqa: E402
from reconciler.inferno.wiring import PEER as INFERNO_PEER  # noqa: E402
from reconciler.runtime.client import KubeClient  # noqa: E402
from reconciler.runtime.kinds import Kind  # noqa: E402
from reconciler.runtime.metrics import Metrics  # noqa: E402
from reconciler.settings import ProcessSettings  # noqa: E402
from shared import constants as c  # noqa: E402
from shared.api import inferno as api  # noqa: E402
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS  # noqa: E402
from shared.scaling_consent import ANNOTATION_SCALED_BY  # noqa: E402

NS = "bench"
MODEL_BOOSTER = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_MODEL_BOOSTER, c.PLURAL_MODEL_BOOSTERS)
MODEL_SERVING = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_MODEL_SERVING, c.PLURAL_MODEL_SERVINGS)
NAMESPACE = Kind("", "v1", "Namespace", "namespaces", namespaced=False)
INFERNO = {kind: Kind(api.GROUP, api.VERSION, kind, plural) for kind, plural, _ in api.INFERNO_KINDS}
CRDS = [
    ROOT / "charts/modelbooster/crds/workload.serving.volcano.sh_modelboosters.yaml",
    ROOT / "charts/modelbooster/charts/child-crds/crds/workload.serving.volcano.sh_modelservings.yaml",
    ROOT / "charts/modelbooster/charts/child-crds/crds/workload.serving.volcano.sh_autoscalingpolicybindings.yaml",
    *sorted((ROOT / "charts/modelbooster/charts/inferno-crds/crds").glob("inferno.platform.ai_*.yaml")),
]
LENGTH = 1024
LOW, HIGH = 60.0, 150.0  # requests/min: 2 and 5 replicas of the worked example's model on G2


# --- the scripted Prometheus (its own process) ------------------------------------------------------------


def serve_prometheus(port: Synchronized, mode: Synchronized, period: float) -> None:  # type: ignore[type-arg]
    """mode 0: every model at LOW; mode 1: LOW and HIGH alternating with each period."""

    async def query(request: web.Request) -> web.Response:
        text = request.query.get("query", "")
        rate = LOW
        if mode.value == 1 and int(time.time() / period) % 2:
            rate = HIGH
        value = rate if "request_success_total" in text else float(LENGTH)
        model = re.search(r'model_name="([^"]*)"', text)
        result = [{"metric": {"model_name": model.group(1) if model else ""}, "value": [time.time(), str(value)]}]
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/api/v1/query", query)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.value = runner.addresses[0][1]
        await asyncio.Event().wait()

    asyncio.run(main())


# --- objects --------------------------------------------------------------------------------------------


def _backend(name: str) -> dict[str, Any]:
    return {
        "name": name, "type": "vLLM", "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "minReplicas": 1,
        "maxReplicas": 20, "workers": [{"type": "server", "image": "vllm/vllm-openai:v0.10.1", "replicas": 1,
                                        "pods": 1}],
    }  # fmt: skip


def _serving(name: str, *, booster: dict[str, Any], backend: str) -> dict[str, Any]:
    meta = booster["metadata"]
    owner = {"apiVersion": MODEL_BOOSTER.api_version, "kind": MODEL_BOOSTER.kind, "name": meta["name"],
             "uid": meta["uid"], "controller": True}  # fmt: skip
    role = {"name": "leader", "replicas": 1, "workerReplicas": 0, "entryTemplate": {"spec": {"containers": []}}}
    return {
        "apiVersion": MODEL_SERVING.api_version, "kind": MODEL_SERVING.kind,
        "metadata": {"name": name, "namespace": NS, "ownerReferences": [owner],
                     "labels": {c.LABEL_BACKEND_NAME: backend}},
        "spec": {"replicas": 1, "schedulerName": "volcano", "template": {"roles": [role]}},
    }  # fmt: skip


def _inferno(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api.API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec}


async def populate(client: KubeClient, *, servers: int, period: float) -> None:
    await client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    perf = {"acc": "G2", "accCount": 1, "alpha": 17.15, "beta": 0.34, "maxBatchSize": 38, "atTokens": 512}
    await client.create(INFERNO["Accelerator"], _inferno("Accelerator", "g2", {"name": "G2", "type": "G2",
                                                                                "cost": 23}))  # fmt: skip
    targets = []
    for index in range(servers):
        model = f"model-{index}"
        await client.create(INFERNO["Model"], _inferno("Model", model, {"name": model, "data": [perf]}))
        targets.append({"model": model, "slo-itl": 40, "slo-ttw": 500})
    await client.create(INFERNO["ServiceClass"], _inferno("ServiceClass", "premium", {"name": "Premium",
                                                                                      "priority": 1,
                                                                                      "data": targets}))  # fmt: skip
    for pair in range((servers + 1) // 2):
        booster = {
            "apiVersion": MODEL_BOOSTER.api_version, "kind": MODEL_BOOSTER.kind,
            "metadata": {"name": f"m{pair}", "namespace": NS, "annotations": {
                ANNOTATION_EXTERNAL_REPLICAS: "true", ANNOTATION_SCALED_BY: f"s{2 * pair},s{2 * pair + 1}"}},
            "spec": {"backends": [_backend("a"), _backend("b")]},
        }  # fmt: skip
        stored = await client.create(MODEL_BOOSTER, booster)
        for backend in ("a", "b"):
            await client.create(MODEL_SERVING, _serving(f"m{pair}-{backend}", booster=stored, backend=backend))
    for index in range(servers):
        serving = f"m{index // 2}-{'ab'[index % 2]}"
        spec = {
            "name": f"s{index}", "class": "Premium", "model": f"model-{index}",
            "currentAlloc": {"accelerator": "G2", "numReplicas": 1},
            "targetRef": {"kind": "ModelServing", "name": serving}, "actuation": "Scale",
            "scaleDownStabilization": "0s",
        }  # fmt: skip
        await client.create(INFERNO["Server"], _inferno("Server", f"s{index}", spec))
    flags = {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    optimizer = {"optimize": False, "interval": f"{int(period * 1000)}ms", "data": {"optimizer": flags}}
    await client.create(INFERNO["Optimizer"], _inferno("Optimizer", "inferno", optimizer))


# --- measuring ------------------------------------------------------------------------------------------


def _value(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def _until(check: Any) -> None:
    """Poll `check()` until true: the controller's metrics are the only signal, and nothing can be awaited."""
    while not check():  # noqa: ASYNC110 - a metric has no event to wait on
        await asyncio.sleep(0.01)


def _requests(metrics: Metrics) -> float:
    return sum(
        sample.value
        for family in metrics.registry.collect()
        if family.name == "rest_client_requests"
        for sample in family.samples
        if sample.name.endswith("_total")
    )


async def phase(metrics: Metrics, *, periods: int, name: str) -> dict[str, Any]:
    runs_at = _value(metrics, "inferno_optimizations_total", result="success")
    await _until(lambda: _value(metrics, "inferno_optimizations_total", result="success") > runs_at)  # a run's end
    runs0 = _value(metrics, "inferno_optimizations_total", result="success")
    cpu0, wall0 = time.process_time(), time.monotonic()
    duration0 = _value(metrics, "inferno_optimization_duration_seconds_sum")
    requests0 = _requests(metrics)
    scaled0 = sum(_value(metrics, "inferno_scale_changes_total", direction=d) for d in ("up", "down"))
    await _until(lambda: _value(metrics, "inferno_optimizations_total", result="success") >= runs0 + periods)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    runs = _value(metrics, "inferno_optimizations_total", result="success") - runs0
    result = {
        "phase": name,
        "runs": runs,
        "cpu_seconds_per_period": round(cpu / runs, 4),
        "run_wall_seconds": round((_value(metrics, "inferno_optimization_duration_seconds_sum") - duration0) / runs, 4),
        "api_requests_per_period": round((_requests(metrics) - requests0) / runs, 1),
        "scale_changes_per_period": round(
            (sum(_value(metrics, "inferno_scale_changes_total", direction=d) for d in ("up", "down")) - scaled0) / runs,
            1,
        ),
        "elapsed_seconds": round(wall, 2),
    }
    print(json.dumps(result))
    return result


def start_fake(kubeconfig: Path) -> subprocess.Popen[str]:
    """The fake API server in its own process, once it serves (it prints one line when ready)."""
    command = [sys.executable, "-m", "tests.fakeapi", "--kubeconfig", str(kubeconfig)]
    for crd in CRDS:
        command += ["--crd", str(crd)]
    fake = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert fake.stdout is not None
    fake.stdout.readline()
    return fake


async def run(args: argparse.Namespace) -> dict[str, Any]:
    kubeconfig = Path(tempfile.mkdtemp(prefix="inferno-loop-bench-")) / "kubeconfig"
    fake = await asyncio.to_thread(start_fake, kubeconfig)
    port: Synchronized = multiprocessing.Value("i", 0)  # type: ignore[type-arg]
    mode: Synchronized = multiprocessing.Value("i", 0)  # type: ignore[type-arg]
    prometheus = multiprocessing.Process(target=serve_prometheus, args=(port, mode, args.period), daemon=True)
    prometheus.start()
    await _until(lambda: port.value != 0)
    metrics = Metrics()
    client = await KubeClient.connect(kubeconfig=str(kubeconfig), user_agent="inferno-loop-bench", metrics=metrics)
    stop = asyncio.Event()
    try:
        setup = await KubeClient.connect(kubeconfig=str(kubeconfig), user_agent="bench-setup")
        await populate(setup, servers=args.servers, period=args.period)
        await setup.close()
        # The changing phase scales down at once (window 0 s): the operator's shortest window is lifted.
        settings = InfernoSettings(prometheus=PrometheusSettings(url=f"http://127.0.0.1:{port.value}"),
                                   ceilings=Ceilings(min_stabilization=0))  # fmt: skip
        process = ProcessSettings(leader_elect=False, resync_period=0)
        built = build(ReconcilerSettings(process=process, inferno=settings), client, metrics, peers=(INFERNO_PEER,))
        manager = built.manager
        task = asyncio.create_task(manager.run(stop))
        await _until(lambda: _value(metrics, "inferno_optimizations_total", result="success") >= 2)  # warm
        results = [await phase(metrics, periods=args.periods, name="steady")]
        mode.value = 1
        await asyncio.sleep(args.period)
        results.append(await phase(metrics, periods=args.periods, name="changing"))
        stop.set()
        await task
    finally:
        await client.close()
        prometheus.terminate()
        fake.terminate()
        fake.wait(timeout=10)
    return {
        "servers": args.servers,
        "period_seconds": args.period,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "phases": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--periods", type=int, default=5)
    parser.add_argument("--period", type=float, default=3.0, help="seconds between runs (Optimizer spec.interval)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "inferno_loop.json")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
