"""How fast the reconciler converges many ModelBoosters, what it costs the API server, and its memory.

Runs the fake API server (`python -m tests.fakeapi`) and the reconciler (`modelbooster reconciler`) as separate
processes, then:
1. raw write throughput: the same API client (reconciler/runtime/client.py) creates the very children the reconciler
   would write for `--raw-boosters` ModelBoosters (without owner references or our labels, in a scratch
   namespace, so the reconciler ignores them), with `--raw-concurrency` requests in flight;
2. creates `--boosters` ModelBoosters (2 vLLM backends each, model-level autoscaling) and measures the time until
   every one has `Initialized=True`, and the reconciler's API requests per ModelBooster (its own
   `rest_client_requests_total`);
3. counts the reconciler's write requests during `--idle` seconds of quiet (goal 0);
4. reads the reconciler's peak RSS (VmHWM) and prints the ratio of its write throughput to the raw one.

    python bench/reconcile_bench.py [--boosters 1000] [--idle 60] [--workers 5]

Prints the figures and writes them to bench/results/reconcile.json. Goals: ratio >= 0.5; 1,000 ModelBoosters
Initialized within 60 s; peak RSS <= 300 MB; 0 writes while idle.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from reconciler.modelbooster.kinds import MODEL_BOOSTER, child_kind_of
from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from shared.validation import parse_modelbooster

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "reconcile.json"
# Every CRD the chart installs (the Inferno controller runs in the same process and watches its kinds).
CRDS = [
    *sorted((ROOT / "charts" / "modelbooster" / "crds").glob("*.yaml")),
    *sorted((ROOT / "charts" / "modelbooster" / "charts" / "child-crds" / "crds").glob("*.yaml")),
]
NAMESPACE = "bench"
RAW_NAMESPACES = ("bench-raw-before", "bench-raw-after")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
GOALS = {"ratio": 0.5, "seconds_to_initialized": 60.0, "peak_rss_mb": 300.0, "idle_writes": 0}
NAMESPACE_KIND = Kind("", "v1", "Namespace", "namespaces", namespaced=False)


def booster(index: int, namespace: str = NAMESPACE) -> dict[str, Any]:
    def backend(name: str, cost: int, weight: int) -> dict[str, Any]:
        return {
            "name": name,
            "type": "vLLM",
            "modelURI": "hf://Qwen/Qwen2.5-7B-Instruct",
            "cacheURI": "pvc://model-cache",
            "minReplicas": 1,
            "maxReplicas": 4,
            "scalingCost": cost,
            "routeWeight": weight,
            "workers": [
                {
                    "type": "server",
                    "image": "vllm/vllm-openai:v0.10.1",
                    "replicas": 1,
                    "pods": 1,
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    "config": {"max-model-len": 32768, "gpu-memory-utilization": 0.9},
                }
            ],
        }

    return {
        "apiVersion": MODEL_BOOSTER.api_version,
        "kind": MODEL_BOOSTER.kind,
        "metadata": {"name": f"model-{index:05d}", "namespace": namespace},
        "spec": {
            "autoscalingPolicy": {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]},
            "backends": [backend("a100", 100, 70), backend("l4", 40, 30)],
        },
    }


# ------------------------------------------------------------------------------------------- processes
def start_fake(workdir: Path, *, history: int) -> tuple[subprocess.Popen[str], str, Path]:
    kubeconfig = workdir / "kubeconfig"
    command = [sys.executable, "-m", "tests.fakeapi", "--kubeconfig", str(kubeconfig), "--history-size", str(history)]
    for crd in CRDS:
        command += ["--crd", str(crd)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise SystemExit("the fake API server did not start")
    return process, json.loads(line)["url"], kubeconfig


def start_reconciler(kubeconfig: Path, *, port: int, workers: int, qps: float) -> subprocess.Popen[bytes]:
    entry = ["-m", "modelbooster"] if not os.environ.get("BENCH_PROFILE") else [os.environ["BENCH_PROFILE"]]
    command = [
        sys.executable, *entry, "reconciler",
        "--kubeconfig", str(kubeconfig),
        "--no-leader-elect",
        "--metrics-port", str(port),
        "--metrics-bind-address", "127.0.0.1",
        "--workers", str(workers),
        "--qps", str(qps),
        "--burst", str(int(qps * 2)),
        "--log-level", "warning",
        "--controller-namespace", "default",
        "--no-cert-duty",  # no admission webhook in this benchmark
    ]  # fmt: skip
    return subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def scrape(session: aiohttp.ClientSession, port: int) -> dict[str, float]:
    """The reconciler's request counters by method: {"GET": n, "POST": n, ...}."""
    async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()
    counts: dict[str, float] = {}
    for match in re.finditer(r"^rest_client_requests_total\{([^}]*)\} ([0-9.e+]+)$", text, re.MULTILINE):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        counts[labels["method"]] = counts.get(labels["method"], 0.0) + float(match.group(2))
    return counts


async def wait_ready(session: aiohttp.ClientSession, port: int, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                if response.status == 200:
                    return
        await asyncio.sleep(0.2)
    raise SystemExit("the reconciler did not become ready")


# ------------------------------------------------------------------------------------------- phases
async def bounded(concurrency: int, jobs: list[Any]) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def run(job: Any) -> None:
        async with semaphore:
            await job

    await asyncio.gather(*(run(job) for job in jobs))


async def raw_writes(client: KubeClient, *, boosters: int, concurrency: int, namespace: str) -> dict[str, float]:
    """Create what the reconciler would write for `boosters` ModelBoosters, as fast as the client can."""
    objects: list[tuple[Kind, dict[str, Any]]] = []
    for index in range(boosters):
        source = booster(index, namespace)
        source["metadata"]["uid"] = f"00000000-0000-0000-0000-{index:012d}"
        for synthesized in synthesize(parse_modelbooster(source), SynthesisSettings()):
            kind = child_kind_of(synthesized)
            assert kind is not None
            child = copy.deepcopy(synthesized)
            child["metadata"].pop("ownerReferences", None)
            child["metadata"]["labels"] = {"bench": "raw"}
            objects.append((kind, child))
    started = time.perf_counter()
    await bounded(concurrency, [client.create(kind, obj, field_manager="bench") for kind, obj in objects])
    elapsed = time.perf_counter() - started
    return {"writes": len(objects), "seconds": elapsed, "writes_per_second": len(objects) / elapsed}


def initialized(obj: dict[str, Any]) -> bool:
    return any(
        condition.get("type") == "Initialized" and condition.get("status") == "True"
        for condition in (obj.get("status") or {}).get("conditions") or ()
    )


async def wait_all_initialized(client: KubeClient, *, expected: int, deadline: float) -> None:
    """Watch the ModelBoosters until `expected` of them are Initialized (a watch costs the API server far less
    than listing every ModelBooster over and over)."""
    done: set[str] = set()
    version = ""
    while True:
        if not version:
            listed = await client.list(MODEL_BOOSTER, namespace=NAMESPACE)
            done = {item["metadata"]["name"] for item in listed.items if initialized(item)}
            version = listed.resource_version
        if len(done) >= expected:
            return
        try:
            async for event in client.watch(MODEL_BOOSTER, namespace=NAMESPACE, resource_version=version,
                                            timeout_seconds=30, read_timeout=40):  # fmt: skip
                if event.type == "ERROR":
                    version = ""
                    break
                version = event.object["metadata"].get("resourceVersion") or version
                if event.type in ("ADDED", "MODIFIED") and initialized(event.object):
                    done.add(event.object["metadata"]["name"])
                    if len(done) >= expected:
                        return
        except ApiError:
            version = ""
        if time.perf_counter() > deadline:
            raise SystemExit(f"only {len(done)}/{expected} Initialized in time")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reconcile-bench-") as tmp:
        fake, url, kubeconfig = start_fake(Path(tmp), history=max(10_000, args.boosters * 20))
        reconciler: subprocess.Popen[bytes] | None = None
        client = KubeClient.for_url(url, user_agent="reconcile-bench")
        session = aiohttp.ClientSession()
        try:
            for namespace in (NAMESPACE, *RAW_NAMESPACES):
                await client.create(NAMESPACE_KIND, {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": namespace}})  # fmt: skip
            # Raw throughput is measured before and after the reconciler's run and averaged: the machine's load
            # drifts, and the ratio should compare like with like.
            raw_before = await raw_writes(
                client, boosters=args.raw_boosters, concurrency=args.raw_concurrency, namespace=RAW_NAMESPACES[0]
            )
            print(f"raw writes: {raw_before['writes']} in {raw_before['seconds']:.2f}s"
                  f" = {raw_before['writes_per_second']:.0f}/s")  # fmt: skip

            port = free_port()
            reconciler = start_reconciler(kubeconfig, port=port, workers=args.workers, qps=args.qps)
            await wait_ready(session, port)
            before = await scrape(session, port)
            cpu_before = (cpu_seconds(reconciler.pid), cpu_seconds(fake.pid))

            started = time.perf_counter()
            waiter = asyncio.create_task(
                wait_all_initialized(client, expected=args.boosters, deadline=started + args.timeout)
            )
            creates = [client.create(MODEL_BOOSTER, booster(i)) for i in range(args.boosters)]
            await bounded(args.raw_concurrency, creates)
            created = time.perf_counter() - started
            print(f"created {args.boosters} ModelBoosters in {created:.2f}s")
            await waiter
            converged = time.perf_counter() - started
            after = await scrape(session, port)
            cpu = (cpu_seconds(reconciler.pid) - cpu_before[0], cpu_seconds(fake.pid) - cpu_before[1])
            print(f"all {args.boosters} Initialized after {converged:.2f}s")

            requests = {method: after.get(method, 0) - before.get(method, 0) for method in after}
            writes = sum(requests.get(method, 0) for method in WRITE_METHODS)
            await asyncio.sleep(args.idle)
            idle = await scrape(session, port)
            idle_writes = sum(idle.get(m, 0) - after.get(m, 0) for m in WRITE_METHODS)
            rss = peak_rss_mb(reconciler.pid)
            raw_after = await raw_writes(
                client, boosters=args.raw_boosters, concurrency=args.raw_concurrency, namespace=RAW_NAMESPACES[1]
            )
            print(f"raw writes again: {raw_after['writes_per_second']:.0f}/s")
            raw_wps = (raw_before["writes_per_second"] + raw_after["writes_per_second"]) / 2
            reconciler_wps = writes / converged
            return {
                "boosters": args.boosters,
                "workers": args.workers,
                "seconds_to_initialized": round(converged, 2),
                "requests_per_booster": {m: round(v / args.boosters, 2) for m, v in sorted(requests.items())},
                "requests_per_booster_total": round(sum(requests.values()) / args.boosters, 2),
                "writes_per_booster": round(writes / args.boosters, 2),
                "reconciler_writes_per_second": round(reconciler_wps, 1),
                "raw_writes_per_second": round(raw_wps, 1),
                "raw_writes_per_second_before_after": [
                    round(raw_before["writes_per_second"], 1),
                    round(raw_after["writes_per_second"], 1),
                ],
                "raw_concurrency": args.raw_concurrency,
                "ratio": round(reconciler_wps / raw_wps, 3),
                "idle_seconds": args.idle,
                "idle_writes": int(idle_writes),
                "peak_rss_mb": round(rss, 1),
                "cpu_seconds_while_converging": {"reconciler": round(cpu[0], 1), "fake_api_server": round(cpu[1], 1)},
                "load_average": [round(value, 2) for value in os.getloadavg()],
                "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
            }
        finally:
            await session.close()
            await client.close()
            if reconciler is not None:
                reconciler.terminate()
                reconciler.wait(30)
            fake.terminate()
            fake.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boosters", type=int, default=1000)
    parser.add_argument("--raw-boosters", type=int, default=600, help="ModelBoosters' worth of raw writes")
    parser.add_argument("--raw-concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--qps", type=float, default=0.0, help="the reconciler's client-side limit (0: none)")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of quiet in which writes are counted")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    try:
        figures = asyncio.run(run(args))
    except ApiError as error:
        print(f"API error: {error}", file=sys.stderr)
        return 1
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    for goal, target in GOALS.items():
        value = figures[goal]
        met = value >= target if goal == "ratio" else value <= target
        print(f"{goal}: {value} (goal {'>=' if goal == 'ratio' else '<='} {target}) {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
