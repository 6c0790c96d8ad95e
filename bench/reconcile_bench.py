"""How fast the reconciler converges many ModelBoosters, what it costs the API server, its memory, and a restart.

Runs `modelbooster reconciler` as a separate process against the fake API server (`python -m tests.fakeapi`,
started here) or, with `--kubeconfig`, against any cluster (nothing is faked then; every object goes into
namespaces named `reconcile-bench-<random>-*` that are deleted at the end, and the reconciler watches only
those). Phases:
1. raw write throughput: the same API client (reconciler/runtime/client.py) creates the very children the
   reconciler would write for `--raw-boosters` ModelBoosters (without owner references or our labels, so the
   reconciler ignores them), with `--raw-concurrency` requests in flight, nobody else writing; run here and
   around every write-rate phase (6.);
2. the reconciler starts with empty caches (its RSS then is the baseline); `--boosters` ModelBoosters (2 vLLM
   backends each, model-level autoscaling) are created and the time until every one is `Initialized=True`,
   the reconciler's requests per ModelBooster (its own `rest_client_requests_total`) and its peak RSS (VmHWM)
   are taken; peak RSS minus the baseline, divided by the ModelBoosters, is the slope per ModelBooster;
3. its write requests during `--idle` seconds of quiet;
4. restart: the reconciler is stopped and started again with everything converged; the time until it is ready
   (caches synced) and until its first full pass is done (every ModelBooster reconciled once, queue empty),
   its writes in that time (goal: none) and its peak RSS;
5. for each further worker count of `--workers`: restart with that many workers, let the first pass finish,
   create `--sweep-boosters` more ModelBoosters in a namespace of their own and measure as in 2.;
6. after 2.-4. and after each 5., the write rate at that worker count: with the reconciler stopped,
   `--sweep-boosters` ModelBoosters are created in a fresh namespace; a raw run; a reconciler with those workers
   starts watching that namespace alone; its writes (its own `rest_client_requests_total`) over the time from
   the last moment it was seen with no write made until every one of them is Initialized; a raw run. The ratio
   is that rate over the mean of the two raw runs next to it. On the fake the phase's namespaces are deleted
   afterwards (the other reconcilers watch every namespace there and must not find them).

The write rate of 6. is the goal's figure, not the one of 2. and 5. (reported too, as `creates_concurrent`, against
the nearest raw runs before and after it, a restart or two apart), for two reasons. While the benchmark creates
ModelBoosters the API server serves those creates (about as costly as a child's create) on the same CPU, and early
on the reconciler waits for work that has not arrived yet: that measures the benchmark as much as the reconciler.
And the raw rate moves with the machine's other load by a factor of two within minutes, so a raw rate from minutes
earlier or later does not describe the same server. In 6. the reconciler has all its work from its start, as the
raw client has, and the raw runs are seconds away. Why the window is fair, not kind:
- the reconciler watches only the phase's namespace, so there are no converged ModelBoosters whose first pass
  (no write, but CPU) would be counted; that pass is the restart's figure (4.) and has no place in a write rate;
- the window starts at the last poll (every 20 ms) of its /metrics that showed no write, so the poll's lag
  lengthens the window, never shortens it; its start-up and cache lists (reads) lie before;
- it ends after every ModelBooster was seen Initialized and the writes were read, and every write the process
  made counts, the Inferno controller's and the Events' included;
- the API server also serves the Initialized waiter's watch meanwhile, as in 2., which the raw runs do not have.

    python bench/reconcile_bench.py [--boosters 1000] [--workers 5,20] [--idle 60] [--kubeconfig FILE]

Prints each figure and each goal with met / NOT met, and writes the figures to
bench/results/reconcile-<boosters>[-cluster].json (or `--output`). Goals: reconciler/raw write rate (6.) >= 0.8 at
every worker count; at 1,000 ModelBoosters all Initialized within 60 s and peak RSS <= 120 MB (the highest of
the converging and every restarted process); 0 writes while idle; 0 writes while a restart reaches ready and
finishes its first pass. RSS figures are MiB (VmHWM kB / 1024).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import math
import os
import platform
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from reconciler.inferno.kinds import OPTIMIZER
from reconciler.modelbooster.kinds import MODEL_BOOSTER, child_kind_of
from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from shared.validation import parse_modelbooster

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# Every CRD the chart installs (the Inferno controller runs in the same process and watches its kinds).
CRDS = [
    *sorted((ROOT / "charts" / "modelbooster" / "crds").glob("*.yaml")),
    *sorted((ROOT / "charts" / "modelbooster" / "charts" / "child-crds" / "crds").glob("*.yaml")),
]
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
CONTROLLER = "modelbooster"
NAMESPACE_KIND = Kind("", "v1", "Namespace", "namespaces", namespaced=False)
RATIO_GOAL = 0.8
GOALS_AT_1000 = {"seconds_to_initialized": 60.0, "peak_rss_mb": 120.0}


class BenchError(Exception):
    """The measurement could not be made; the message says why."""


def booster(index: int, namespace: str) -> dict[str, Any]:
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


# ------------------------------------------------------------------------------------------- where it runs
@dataclass
class Namespaces:
    main: str
    raw_start: str
    sweeps: dict[int, str] = field(default_factory=dict)  # workers -> namespace

    def all(self) -> list[str]:
        return [self.main, self.raw_start, *self.sweeps.values()]

    def watched(self) -> list[str]:
        return [self.main, *self.sweeps.values()]

    def rate_phase(self, workers: int) -> tuple[str, str, str]:
        """The write-rate phase's ModelBoosters' namespace and its raw runs' before and after."""
        prefix = f"{self.main}-rate-w{workers}"
        return prefix, f"{prefix}-raw-before", f"{prefix}-raw-after"


@dataclass
class Target:
    client: KubeClient
    waiter: KubeClient  # the Initialized waiter's own connections, apart from the creates' pool
    kubeconfig: Path
    namespaces: Namespaces
    cluster: bool  # a real cluster through --kubeconfig, not the fake
    inferno: bool  # whether the Inferno CRDs are served (the reconciler's Inferno controller needs them)
    server_pid: int | None = None  # the fake API server's process, whose CPU time tells where a phase's time went
    created: list[str] = field(default_factory=list)  # namespaces to delete at the end (on a cluster)

    def server_cpu(self) -> float:
        return cpu_seconds(self.server_pid) if self.server_pid is not None else float("nan")

    async def add_namespace(self, name: str) -> None:
        await self.client.create(NAMESPACE_KIND, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self.created.append(name)

    async def drop_namespaces(self, names: list[str], *, within: float) -> None:
        """Delete `names` and wait until they are gone with their content."""
        for name in names:
            with contextlib.suppress(ApiError):
                await self.client.delete(NAMESPACE_KIND, None, name)
        deadline = time.monotonic() + within
        for name in names:
            while True:
                try:
                    await self.client.get(NAMESPACE_KIND, None, name)
                except ApiError as error:
                    if error.not_found:
                        break
                    raise
                if time.monotonic() > deadline:
                    raise BenchError(f"namespace {name} was not gone within {within:.0f}s")
                await asyncio.sleep(0.2)


def start_fake(workdir: Path, *, history: int) -> tuple[subprocess.Popen[str], str, Path]:
    kubeconfig = workdir / "kubeconfig"
    command = [sys.executable, "-m", "tests.fakeapi", "--kubeconfig", str(kubeconfig), "--history-size", str(history)]
    for crd in CRDS:
        command += ["--crd", str(crd)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise BenchError("the fake API server did not start")
    return process, json.loads(line)["url"], kubeconfig


async def served(client: KubeClient, kind: Kind, namespace: str) -> bool:
    try:
        await client.list(kind, namespace=namespace, limit=1)
    except ApiError as error:
        if error.not_found:
            return False
        raise
    return True


@contextlib.asynccontextmanager
async def target(args: argparse.Namespace) -> AsyncIterator[Target]:
    """The API server to measure against, with the benchmark's namespaces created (and, on a cluster, deleted
    at the end)."""
    sweep_workers = args.workers[1:]
    if args.kubeconfig:
        prefix = f"reconcile-bench-{secrets.token_hex(3)}"
        names = Namespaces(main=prefix, raw_start=f"{prefix}-raw-start",
                           sweeps={w: f"{prefix}-w{w}" for w in sweep_workers})  # fmt: skip
        client = await KubeClient.connect(kubeconfig=args.kubeconfig, user_agent="reconcile-bench")
        waiter = await KubeClient.connect(kubeconfig=args.kubeconfig, user_agent="reconcile-bench-waiter")
        fake = None
        kubeconfig = Path(args.kubeconfig)
    else:
        names = Namespaces(main="bench", raw_start="bench-raw-start", sweeps={w: f"bench-w{w}" for w in sweep_workers})
        workdir = tempfile.TemporaryDirectory(prefix="reconcile-bench-")
        history = max(10_000, (args.boosters + args.sweep_boosters * (len(sweep_workers) + len(args.workers))) * 20)
        fake, url, kubeconfig = start_fake(Path(workdir.name), history=history)
        client = KubeClient.for_url(url, user_agent="reconcile-bench")
        waiter = KubeClient.for_url(url, user_agent="reconcile-bench-waiter")
    where = Target(client, waiter, kubeconfig, names, cluster=fake is None, inferno=False,
                   server_pid=fake.pid if fake is not None else None)  # fmt: skip
    try:
        for namespace in names.all():
            await where.add_namespace(namespace)
        if not await served(client, MODEL_BOOSTER, names.main):
            raise BenchError("the ModelBooster CRD is not installed: install the chart's CRDs first")
        where.inferno = await served(client, OPTIMIZER, names.main)
        yield where
    finally:
        if fake is None:
            for namespace in where.created:  # everything the benchmark made goes with its namespaces
                with contextlib.suppress(ApiError):
                    await client.delete(NAMESPACE_KIND, None, namespace)
        await client.close()
        await waiter.close()
        if fake is not None:
            fake.terminate()
            fake.wait(30)
            workdir.cleanup()


# ------------------------------------------------------------------------------------------- the reconciler
class Reconciler:
    """One `modelbooster reconciler` process and its metrics endpoint."""

    def __init__(
        self, where: Target, session: aiohttp.ClientSession, *, workers: int, qps: float, only: str | None = None
    ) -> None:
        """`only`: watch this namespace alone (else all, or on a cluster the benchmark's main ones)."""
        self.port = free_port()
        self.launched = time.perf_counter()
        self.session = session
        entry = ["-m", "modelbooster"] if not os.environ.get("BENCH_PROFILE") else [os.environ["BENCH_PROFILE"]]
        command = [
            sys.executable, *entry, "reconciler",
            "--kubeconfig", str(where.kubeconfig),
            "--no-leader-elect",
            "--metrics-port", str(self.port),
            "--metrics-bind-address", "127.0.0.1",
            "--modelbooster-workers", str(workers),
            "--qps", str(qps),
            "--burst", str(int(qps * 2)),
            "--log-level", "warning",
            "--controller-namespace", where.namespaces.main,
            "--no-cert-duty",  # no admission webhook in this benchmark
        ]  # fmt: skip
        if only is not None:
            command += ["--namespaces", only]
        elif where.cluster:  # never touch anything outside the benchmark's namespaces
            command += ["--namespaces", ",".join(where.namespaces.watched())]
        if not where.inferno:
            command.append("--no-inferno")
        self.process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(60)

    def rss_mb(self, field_name: str = "VmHWM") -> float:
        """VmHWM: the peak resident set so far; VmRSS: the current one."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.process.pid)

    async def wait_ready(self, within: float) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"the reconciler exited with status {self.process.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                async with self.session.get(f"http://127.0.0.1:{self.port}/readyz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.1)
        raise BenchError(f"the reconciler was not ready within {within:.0f}s")

    async def metrics(self) -> Metrics:
        async with self.session.get(f"http://127.0.0.1:{self.port}/metrics") as response:
            return Metrics(await response.text())


class Metrics:
    """The few series of the reconciler's /metrics the benchmark reads."""

    def __init__(self, text: str) -> None:
        self.samples: list[tuple[str, dict[str, str], float]] = []
        for match in re.finditer(r"^(\w+)\{([^}]*)\} ([0-9.e+-]+)$", text, re.MULTILINE):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
            self.samples.append((match.group(1), labels, float(match.group(3))))

    def total(self, series: str, /, **labels: str) -> float:
        return sum(
            value
            for sample, have, value in self.samples
            if sample == series and all(have.get(key) == want for key, want in labels.items())
        )

    def requests(self) -> dict[str, float]:
        counts: dict[str, float] = {}
        for sample, labels, value in self.samples:
            if sample == "rest_client_requests_total":
                counts[labels["method"]] = counts.get(labels["method"], 0.0) + value
        return counts

    def writes(self) -> float:
        return sum(self.requests().get(method, 0.0) for method in WRITE_METHODS)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------- phases
async def bounded(concurrency: int, jobs: list[Awaitable[Any]]) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def run(job: Awaitable[Any]) -> None:
        async with semaphore:
            await job

    await asyncio.gather(*(run(job) for job in jobs))


async def raw_writes(where: Target, *, boosters: int, concurrency: int, namespace: str) -> dict[str, float]:
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
    started, server_cpu = time.perf_counter(), where.server_cpu()
    await bounded(concurrency, [where.client.create(kind, obj, field_manager="bench") for kind, obj in objects])
    elapsed = time.perf_counter() - started
    print(f"raw writes ({namespace}): {len(objects)} in {elapsed:.2f}s = {len(objects) / elapsed:.0f}/s", flush=True)
    return {"writes": len(objects), "seconds": elapsed, "writes_per_second": len(objects) / elapsed,
            "server_cpu_ms_per_write": (where.server_cpu() - server_cpu) * 1000 / len(objects)}  # fmt: skip


def initialized(obj: dict[str, Any]) -> bool:
    return any(
        condition.get("type") == "Initialized" and condition.get("status") == "True"
        for condition in (obj.get("status") or {}).get("conditions") or ()
    )


async def initialized_names(client: KubeClient, namespace: str) -> tuple[set[str], list[str], str]:
    """(names Initialized, names not, resourceVersion) from a fresh paged list."""
    done: set[str] = set()
    pending: list[str] = []
    token, version = None, ""
    while True:
        page = await client.list(MODEL_BOOSTER, namespace=namespace, limit=500, continue_token=token)
        version = version or page.resource_version
        for item in page.items:
            if initialized(item):
                done.add(item["metadata"]["name"])
            else:
                pending.append(item["metadata"]["name"])
        token = page.continue_token
        if not token:
            return done, pending, version


async def wait_all_initialized(client: KubeClient, *, namespace: str, expected: int, deadline: float) -> None:
    """Watch the ModelBoosters until `expected` of them are Initialized (a watch costs the API server far less
    than listing every ModelBooster over and over). Each watch round has a hard time bound: a stream that stops
    moving without ending (seen now and then under load) must not stall the benchmark; after a round that broke
    (error event, failed request, the bound) the waiter lists afresh and watches again; after one that ended
    normally it resumes from the last resourceVersion seen, which misses nothing."""
    done: set[str] = set()
    version = ""
    while True:
        if not version:
            done, _, version = await initialized_names(client, namespace)
        if len(done) >= expected:
            return
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            break
        rounds = max(1, min(10, int(remaining)))
        try:
            async with asyncio.timeout(rounds + 10):
                async for event in client.watch(MODEL_BOOSTER, namespace=namespace, resource_version=version,
                                                timeout_seconds=rounds, read_timeout=rounds + 5):  # fmt: skip
                    if event.type == "ERROR":
                        version = ""
                        break
                    version = event.object["metadata"].get("resourceVersion") or version
                    if event.type in ("ADDED", "MODIFIED") and initialized(event.object):
                        done.add(event.object["metadata"]["name"])
                        if len(done) >= expected:
                            return
        except (ApiError, TimeoutError):
            version = ""
        print(f"  {len(done)}/{expected} Initialized", flush=True)
    # Tell a miss of this watch from a miss of the reconciler.
    really, pending, _ = await initialized_names(client, namespace)
    raise BenchError(f"only {len(done)}/{expected} seen Initialized in time; a fresh list shows {len(really)} "
                     f"(not Initialized: {', '.join(pending[:5])}{' ...' if len(pending) > 5 else ''})")  # fmt: skip


async def converge(
    where: Target, reconciler: Reconciler, *, namespace: str, count: int, concurrency: int, within: float
) -> dict[str, Any]:
    """Create `count` ModelBoosters and wait until every one is Initialized; the reconciler's figures."""
    before = await reconciler.metrics()
    cpu_before, server_cpu = reconciler.cpu_seconds(), where.server_cpu()
    started = time.perf_counter()
    waiter = asyncio.create_task(
        wait_all_initialized(where.waiter, namespace=namespace, expected=count, deadline=started + within)
    )
    await bounded(concurrency, [where.client.create(MODEL_BOOSTER, booster(i, namespace)) for i in range(count)])
    print(f"created {count} ModelBoosters in {time.perf_counter() - started:.2f}s", flush=True)
    await waiter
    converged = time.perf_counter() - started
    after = await reconciler.metrics()
    print(f"all {count} Initialized after {converged:.2f}s", flush=True)
    requests = {method: value - before.requests().get(method, 0.0) for method, value in after.requests().items()}
    writes = after.writes() - before.writes()
    return {
        "boosters": count,
        "seconds_to_initialized": round(converged, 2),
        "requests_per_booster": {m: round(v / count, 2) for m, v in sorted(requests.items())},
        "requests_per_booster_total": round(sum(requests.values()) / count, 2),
        "writes_per_booster": round(writes / count, 2),
        "reconciler_writes_per_second": round(writes / converged, 1),
        "reconciler_cpu_seconds": round(reconciler.cpu_seconds() - cpu_before, 1),
        # Everything the API server did meanwhile (the benchmark's creates, the reconciler's writes, the watches)
        # per write of the reconciler: compare with the raw phases' figure.
        "server_cpu_ms_per_reconciler_write": round((where.server_cpu() - server_cpu) * 1000 / writes, 2),
        "metrics_after": after,
    }


async def first_write(where: Target, reconciler: Reconciler, *, deadline: float) -> tuple[float, float, float]:
    """(time, reconciler CPU, server CPU) when the reconciler was last seen with no write made: the start of its
    write-rate window. Its writes can only come later, so a poll's lag lengthens the window, never shortens it."""
    seen = (reconciler.launched, 0.0, where.server_cpu())  # nothing can be written before the process exists
    while time.perf_counter() < deadline:
        if reconciler.process.poll() is not None:
            raise BenchError(f"the reconciler exited with status {reconciler.process.returncode}")
        at, cpu, server_cpu = time.perf_counter(), reconciler.cpu_seconds(), where.server_cpu()
        with contextlib.suppress(aiohttp.ClientError):  # /metrics not served yet
            if (await reconciler.metrics()).writes() > 0:
                return seen
            seen = (at, cpu, server_cpu)
        await asyncio.sleep(0.02)
    raise BenchError("the reconciler made no write in time")


async def write_rate(
    where: Target, session: aiohttp.ClientSession, *, workers: int, qps: float, namespace: str, count: int,
    within: float,
) -> dict[str, Any]:  # fmt: skip
    """Start a reconciler with `workers` over `count` ModelBoosters waiting in `namespace`, which it watches
    alone: its writes per second from its first write until every one is Initialized."""
    started = time.perf_counter()
    waiter = asyncio.create_task(
        wait_all_initialized(where.waiter, namespace=namespace, expected=count, deadline=started + within)
    )
    reconciler = Reconciler(where, session, workers=workers, qps=qps, only=namespace)
    try:
        window_start, cpu_before, server_cpu = await first_write(where, reconciler, deadline=started + within)
        await waiter
        after = await reconciler.metrics()
        window_end = time.perf_counter()  # after the figures were taken: a window too long rather than too short
        seconds = window_end - window_start
        writes = after.writes()
        figures = {
            "boosters": count,
            "seconds_to_first_write": round(window_start - reconciler.launched, 2),
            "seconds_first_write_to_initialized": round(seconds, 2),
            "writes": int(writes),
            "writes_per_second": round(writes / seconds, 1),
            "reconciler_cpu_seconds": round(reconciler.cpu_seconds() - cpu_before, 1),
            "server_cpu_ms_per_reconciler_write": round((where.server_cpu() - server_cpu) * 1000 / writes, 2),
        }
    finally:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError, BenchError, ApiError):  # the first error is the one to tell
            await waiter
        reconciler.stop()
    print(f"write rate ({workers} workers, {count} ModelBoosters waiting): {figures['writes']} writes in "
          f"{seconds:.2f}s from the first write to all Initialized = {figures['writes_per_second']}/s",
          flush=True)  # fmt: skip
    return figures


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def ratio(rate: float, raws: list[dict[str, float]]) -> dict[str, Any]:
    """`rate` over the mean of the raw runs around it; over each one alone too, which shows how far the machine's
    load moved the raw rate meanwhile (how uncertain the ratio is)."""
    raw = sum(entry["writes_per_second"] for entry in raws) / len(raws)
    return {"ratio": round(rate / raw, 3), "raw_writes_per_second": round(raw, 1),
            "raw_writes_per_second_before_after": [round(entry["writes_per_second"], 1) for entry in raws],
            "ratio_to_raw_before_after": [round(rate / entry["writes_per_second"], 3) for entry in raws]}  # fmt: skip


async def rate_phase(
    where: Target, session: aiohttp.ClientSession, args: argparse.Namespace, *, workers: int
) -> tuple[dict[str, Any], dict[str, float], dict[str, float]]:
    """The write rate at `workers` between two raw runs: (figures, raw before, raw after)."""
    namespace, raw_before_ns, raw_after_ns = where.namespaces.rate_phase(workers)
    for name in (namespace, raw_before_ns, raw_after_ns):
        await where.add_namespace(name)
    load_at_start = load_average()
    count = args.sweep_boosters
    creates: list[Awaitable[Any]] = [where.client.create(MODEL_BOOSTER, booster(i, namespace)) for i in range(count)]
    await bounded(args.raw_concurrency, creates)
    print(f"created {count} ModelBoosters in {namespace} with no reconciler running", flush=True)
    raw_before = await raw_writes(where, boosters=args.raw_boosters, concurrency=args.raw_concurrency,
                                  namespace=raw_before_ns)  # fmt: skip
    measured = await write_rate(where, session, workers=workers, qps=args.qps, namespace=namespace, count=count,
                                within=args.timeout)  # fmt: skip
    raw_after = await raw_writes(where, boosters=args.raw_boosters, concurrency=args.raw_concurrency,
                                 namespace=raw_after_ns)  # fmt: skip
    server_raw = (raw_before["server_cpu_ms_per_write"] + raw_after["server_cpu_ms_per_write"]) / 2
    figures = {**measured, **ratio(measured["writes_per_second"], [raw_before, raw_after]),
               "server_cpu_ms_per_raw_write_before_after": [round(raw_before["server_cpu_ms_per_write"], 2),
                                                            round(raw_after["server_cpu_ms_per_write"], 2)],
               # The API server's CPU per raw write over that per reconciler write: about what the ratio is when
               # the server alone is the bottleneck (the fake only: its CPU is read). The machine's load moves it
               # less than the rates, but moves it: a core shared with other work does less per CPU second.
               "server_cpu_ratio": None if where.cluster
               else round(server_raw / measured["server_cpu_ms_per_reconciler_write"], 3),
               "load_average_before_after": [load_at_start, load_average()]}  # fmt: skip
    print(f"  ratio {figures['ratio']} (raw before/after {figures['raw_writes_per_second_before_after']}, load "
          f"{figures['load_average_before_after']})", flush=True)  # fmt: skip
    if not where.cluster:
        # The fake's reconcilers watch every namespace: the next restart must not find this phase's objects.
        # (On a cluster they watch only the benchmark's main namespaces; everything goes at the end.)
        await where.drop_namespaces([namespace, raw_before_ns, raw_after_ns], within=args.timeout)
    return figures, raw_before, raw_after


async def restart(
    where: Target, session: aiohttp.ClientSession, old: Reconciler, *, workers: int, qps: float, boosters: int,
    within: float,
) -> tuple[Reconciler, dict[str, Any]]:  # fmt: skip
    """Stop `old`, start a new reconciler over `boosters` converged ModelBoosters: time to ready and to the end
    of its first full pass, and its writes meanwhile."""
    old.stop()
    started = time.perf_counter()
    new = Reconciler(where, session, workers=workers, qps=qps)
    await new.wait_ready(within)
    ready = time.perf_counter() - started
    deadline = started + within
    while True:
        metrics = await new.metrics()
        reconciled = metrics.total("controller_runtime_reconcile_total", controller=CONTROLLER)
        busy = metrics.total("workqueue_depth", name=CONTROLLER) + metrics.total(
            "controller_runtime_active_workers", controller=CONTROLLER
        )
        if reconciled >= boosters and busy == 0:
            break
        if time.perf_counter() > deadline:
            raise BenchError(f"the restarted reconciler reconciled {reconciled:.0f}/{boosters} in {within:.0f}s")
        await asyncio.sleep(0.1)
    passed = time.perf_counter() - started
    figures = {
        "workers": workers,
        "boosters": boosters,
        "seconds_to_ready": round(ready, 2),
        "seconds_to_first_pass_done": round(passed, 2),
        "reconciles": int(reconciled),
        "writes": int(metrics.writes()),
        "requests": {method: int(value) for method, value in sorted(metrics.requests().items())},
        "peak_rss_mb": round(new.rss_mb(), 1),
    }
    print(f"restart ({workers} workers, {boosters} ModelBoosters): ready after {ready:.2f}s, first pass done after "
          f"{passed:.2f}s, {figures['writes']} writes, peak RSS {figures['peak_rss_mb']} MB", flush=True)  # fmt: skip
    return new, figures


async def run(args: argparse.Namespace) -> dict[str, Any]:
    async with target(args) as where, aiohttp.ClientSession() as session:
        names = where.namespaces
        raw_before = await raw_writes(where, boosters=args.raw_boosters, concurrency=args.raw_concurrency,
                                      namespace=names.raw_start)  # fmt: skip
        first_workers = args.workers[0]
        reconciler = Reconciler(where, session, workers=first_workers, qps=args.qps)
        try:
            await reconciler.wait_ready(args.timeout)
            await asyncio.sleep(1.0)  # let start-up garbage settle before taking the empty-cache baseline
            baseline_rss = reconciler.rss_mb("VmRSS")
            main = await converge(where, reconciler, namespace=names.main, count=args.boosters,
                                  concurrency=args.raw_concurrency, within=args.timeout)  # fmt: skip
            peak_rss = reconciler.rss_mb()
            await asyncio.sleep(args.idle)
            idle_writes = (await reconciler.metrics()).writes() - main.pop("metrics_after").writes()
            print(f"idle {args.idle:.0f}s: {idle_writes:.0f} writes; peak RSS {peak_rss:.1f} MB "
                  f"(empty caches: {baseline_rss:.1f} MB)", flush=True)  # fmt: skip
            reconciler, restarted = await restart(where, session, reconciler, workers=first_workers, qps=args.qps,
                                                  boosters=args.boosters, within=args.timeout)  # fmt: skip
            keys = ("seconds_to_initialized", "reconciler_writes_per_second", "server_cpu_ms_per_reconciler_write")
            concurrent = {key: main[key] for key in keys}
            throughput = []
            total = args.boosters
            sweep_restarts = []
            raw_last = raw_before  # the raw run just before the converging measured with creates concurrent
            for index, workers in enumerate(args.workers):
                if index:
                    reconciler, again = await restart(where, session, reconciler, workers=workers, qps=args.qps,
                                                      boosters=total, within=args.timeout)  # fmt: skip
                    sweep_restarts.append(again)
                    swept = await converge(where, reconciler, namespace=names.sweeps[workers],
                                           count=args.sweep_boosters, concurrency=args.raw_concurrency,
                                           within=args.timeout)  # fmt: skip
                    total += args.sweep_boosters
                    concurrent = {key: swept[key] for key in keys}
                    concurrent_boosters = args.sweep_boosters
                else:
                    concurrent_boosters = args.boosters
                reconciler.stop()
                rate, raw_next, raw_last_of_phase = await rate_phase(where, session, args, workers=workers)
                rated = ratio(concurrent["reconciler_writes_per_second"], [raw_last, raw_next])
                old_style = {"boosters": concurrent_boosters, **concurrent, **rated}
                throughput.append({"workers": workers, **rate, "creates_concurrent": old_style})
                print(f"  with the creates concurrent: {concurrent['reconciler_writes_per_second']}/s, ratio "
                      f"{rated['ratio']} (raw {rated['raw_writes_per_second_before_after']})", flush=True)  # fmt: skip
                raw_last = raw_last_of_phase
        finally:
            reconciler.stop()
        slope_kb = (peak_rss - baseline_rss) * 1024 / args.boosters
        restarted["rss_per_booster_kb"] = round((restarted["peak_rss_mb"] - baseline_rss) * 1024 / args.boosters, 1)
        return {
            "target": "cluster (--kubeconfig)" if where.cluster else "fake API server (tests/fakeapi)",
            "server_version": await server_version(where.client),
            "inferno_controller": where.inferno,
            **main,
            "workers": first_workers,
            "idle_seconds": args.idle,
            "idle_writes": int(idle_writes),
            "rss_empty_caches_mb": round(baseline_rss, 1),
            "peak_rss_mb": round(peak_rss, 1),
            "rss_per_booster_kb": round(slope_kb, 1),
            "restart": restarted,
            "restarts_before_sweeps": sweep_restarts,
            "raw_writes_per_second_at_start": round(raw_before["writes_per_second"], 1),
            "raw_boosters": args.raw_boosters,
            "raw_concurrency": args.raw_concurrency,
            "throughput": throughput,
            "load_average_at_end": [round(value, 2) for value in os.getloadavg()],
            "load_average_at_start": args.load_at_start,
            "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
        }


async def server_version(client: KubeClient) -> str:
    with contextlib.suppress(ApiError):
        _, body = await client.request("GET", "/version")
        return str(body.get("gitVersion") or "")
    return ""


# ------------------------------------------------------------------------------------------- goals
Check = tuple[str, Any, str, Callable[[Any], bool] | None]  # name, value, goal text, test (None: not applicable)


def goals(figures: dict[str, Any]) -> list[Check]:
    at_1000 = figures["boosters"] == 1000
    checks: list[Check] = []
    for entry in figures["throughput"]:
        checks.append((f"write rate ratio at {entry['workers']} workers (started over waiting ModelBoosters)",
                       entry["ratio"], f">= {RATIO_GOAL}", lambda value: value >= RATIO_GOAL))  # fmt: skip
    restarts = [figures["restart"], *figures["restarts_before_sweeps"]]
    peak = max(figures["peak_rss_mb"], *(entry["peak_rss_mb"] for entry in restarts))  # converging or restarting
    for name, value in (("seconds_to_initialized", figures["seconds_to_initialized"]), ("peak_rss_mb", peak)):
        limit = GOALS_AT_1000[name]
        test = (lambda value, limit=limit: value <= limit) if at_1000 else None
        checks.append((name, value, f"<= {limit} at 1,000 ModelBoosters", test))
    checks.append(("idle_writes", figures["idle_writes"], "== 0", lambda value: value == 0))
    checks.append(("restart writes until the first pass is done", max(entry["writes"] for entry in restarts), "== 0",
                   lambda value: value == 0))  # fmt: skip
    return checks


def report(figures: dict[str, Any]) -> None:
    for name, value, goal, test in goals(figures):
        verdict = "n/a (other size)" if test is None else ("met" if test(value) else "NOT met")
        print(f"{name}: {value} (goal {goal}) {verdict}")
    for entry in figures["throughput"]:
        old = entry["creates_concurrent"]
        print(f"  {entry['workers']} workers: {entry['writes_per_second']} writes/s against raw "
              f"{entry['raw_writes_per_second_before_after']} (ratio to each alone "
              f"{entry['ratio_to_raw_before_after']}; load {entry['load_average_before_after'][0][0]} -> "
              f"{entry['load_average_before_after'][1][0]}; server CPU per raw write over that per reconciler "
              f"write {entry['server_cpu_ratio']}); not the goal's figure: while the benchmark creates "
              f"concurrently {old['reconciler_writes_per_second']} writes/s, ratio {old['ratio']} against raw "
              f"{old['raw_writes_per_second_before_after']}")  # fmt: skip
    print(f"restart: ready after {figures['restart']['seconds_to_ready']}s, first pass done after "
          f"{figures['restart']['seconds_to_first_pass_done']}s; RSS slope per ModelBooster over "
          f"{figures['rss_empty_caches_mb']} MB with empty caches: {figures['rss_per_booster_kb']} KB converging, "
          f"{figures['restart']['rss_per_booster_kb']} KB restarted")  # fmt: skip


def json_safe(value: Any) -> Any:
    """NaN (the API server's CPU on a cluster, which is not read) as null: JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    return value


def workers_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a comma-separated list of worker counts") from None
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"{text!r}: worker counts must be >= 1")
    if len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(f"{text!r}: a worker count given twice")
    return values


def dump_tasks() -> None:
    """On SIGUSR1: where every task of the benchmark waits (to diagnose a stall)."""
    for task in asyncio.all_tasks():
        task.print_stack(limit=8, file=sys.stderr)


async def run_dumpable(args: argparse.Namespace) -> dict[str, Any]:
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump_tasks)
    return await run(args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boosters", type=int, default=1000)
    parser.add_argument("--workers", type=workers_list, default=[5, 20],
                        help="worker counts: the first converges --boosters, each other one --sweep-boosters more")
    parser.add_argument("--sweep-boosters", type=int, default=1000)
    parser.add_argument("--raw-boosters", type=int, default=600, help="ModelBoosters' worth of raw writes")
    parser.add_argument("--raw-concurrency", type=int, default=32)
    parser.add_argument("--qps", type=float, default=0.0, help="the reconciler's client-side limit (0: none)")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of quiet in which writes are counted")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds any one phase may take")
    parser.add_argument("--kubeconfig", help="measure against this cluster instead of the fake API server")
    parser.add_argument("--output", type=Path, help="results file (default bench/results/reconcile-<boosters>.json)")
    args = parser.parse_args()
    if args.boosters < 1 or args.sweep_boosters < 1 or args.raw_boosters < 1:
        parser.error("--boosters, --sweep-boosters and --raw-boosters must be >= 1")
    args.load_at_start = [round(value, 2) for value in os.getloadavg()]
    try:
        figures = json_safe(asyncio.run(run_dumpable(args)))
    except (ApiError, BenchError) as error:
        print(f"reconcile_bench: {error}", file=sys.stderr)
        return 1
    suffix = "-cluster" if figures["target"].startswith("cluster") else ""
    output = args.output or RESULTS / f"reconcile-{args.boosters}{suffix}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    report(figures)
    print(f"results: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
