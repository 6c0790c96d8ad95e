"""Webhook throughput and latency against a bare aiohttp TLS server that only answers `allowed: true`.

    python bench/webhook_bench.py [--duration 10] [--rounds 3] [--connections 1,16] [--client auto|wrk|aiohttp]
                                  [--entry cli|module] [--event-loop auto|asyncio|uvloop] [--results PATH]

Starts, each in its own process:
- `modelbooster webhook`, as deployed (text logs at info, default settings);
- a bare aiohttp HTTPS server on the same certificate and event loop that parses the review and echoes its
  uid with `allowed: true` (the least any admission webhook does);
- "machinery": the webhook with `shared` validation stubbed to "no errors", to tell our plumbing (HTTP, TLS,
  checks, metrics, logging) from the cost of the rules.
All are driven with the same AdmissionReview of a realistic two-backend ModelBooster, by wrk when installed
(Debian package `wrk`) or else by an aiohttp client in a separate process, at each connection count.
Targets are interleaved round by round and the median round is reported, so a noisy neighbour hits all of
them alike. Prints requests/s, p50/p99 latency, the server's CPU time per request (user and system, from
/proc: what a request costs whatever else runs on the machine), the webhook/bare throughput ratios and the
webhook's RSS, checks them against the goals (validate >= 0.7 x bare at 16 connections and >= 0.8 x bare
at 1, p99 <= 10 ms at 16 connections, RSS <= 100 MB), each said met or not met, and writes everything,
every round and the load average before and after included, to bench/results/webhook_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "webhook_bench.json"
# validate/bare throughput by connection count: with one connection, latency is all there is.
GOAL_RATIOS = {16: 0.7, 1: 0.8}
# (target, payload): the baseline, our machinery with the rules stubbed out, then the real webhook paths.
TARGETS = (("bare", "validate"), ("machinery", "validate"), ("validate", "validate"), ("mutate", "mutate"))
GOAL_P99_MS = 10.0
GOAL_RSS_MB = 100.0
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------------ payloads


def two_backend_model_booster(*, defaulted: bool) -> dict[str, Any]:
    """Two vLLM backends under model-level autoscaling, as a user would write it (or after defaulting)."""

    def backend(name: str, *, cost: int, accelerator: str) -> dict[str, Any]:
        worker: dict[str, Any] = {
            "image": "vllm/vllm-openai:v0.8.5",
            "resources": {
                "limits": {"cpu": "8", "memory": "32Gi", accelerator: "1"},
                "requests": {"cpu": "4", "memory": "16Gi", accelerator: "1"},
            },
            "config": {
                "served-model-name": "deepseek-r1-7b",
                "tensor-parallel-size": 1,
                "max-model-len": 32768,
                "gpu-memory-utilization": 0.9,
            },
        }
        spec: dict[str, Any] = {
            "name": name,
            "type": "vLLM",
            "modelURI": "hf://deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
            "cacheURI": "hostpath:///mnt/cache",
            "env": [
                {"name": "HF_ENDPOINT", "value": "https://hf-mirror.com"},
                {"name": "RUNTIME_PORT", "value": "8100"},
            ],
            "minReplicas": 1,
            "maxReplicas": 4,
            "scalingCost": cost,
            "workers": [worker],
        }
        if defaulted:
            spec.update({"routeWeight": 100, "scaleToZeroGracePeriod": "30s"})
            worker.update({"type": "server", "replicas": 1, "pods": 1})
        return spec

    policy: dict[str, Any] = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": "10"}]}
    spec: dict[str, Any] = {
        "autoscalingPolicy": policy,
        "modelMatch": {"headers": {"x-model": {"exact": "deepseek-r1-7b"}}},
        "backends": [
            backend("a100", cost=100, accelerator="nvidia.com/gpu"),
            backend("ascend", cost=60, accelerator="huawei.com/ascend-1980"),
        ],
    }
    if defaulted:
        policy["tolerancePercent"] = 10
        spec["costExpansionRatePercent"] = 200
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {
            "name": "deepseek-r1-7b",
            "namespace": "llm",
            "uid": "0f6f8b9e-2b1c-4e8e-9a57-5d1b7c3e2a10",
            "creationTimestamp": "2026-03-01T12:00:00Z",
            "generation": 1,
            "labels": {"team": "inference"},
        },
        "spec": spec,
    }


def admission_review(obj: dict[str, Any]) -> dict[str, Any]:
    gvk = {"group": "workload.serving.volcano.sh", "version": "v1alpha1", "kind": "ModelBooster"}
    gvr = {"group": "workload.serving.volcano.sh", "version": "v1alpha1", "resource": "modelboosters"}
    return {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": obj["metadata"]["name"],
            "namespace": obj["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl"},
        },
    }


# ------------------------------------------------------------------------------------------------ bare server


def serve_bare(*, port: int, cert: Path, key: Path, event_loop: str) -> None:
    """The baseline: parse the review, answer allowed with its uid. Nothing else."""
    from aiohttp import web

    async def admit(request: web.Request) -> web.Response:
        review = json.loads(await request.read())
        answer = {
            "apiVersion": review["apiVersion"],
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True},
        }
        return web.Response(text=json.dumps(answer, separators=(",", ":")), content_type="application/json")

    async def main() -> None:
        app = web.Application(client_max_size=3 * 1024 * 1024)
        app.router.add_post("/validate/modelbooster", admit)
        app.router.add_post("/mutate/modelbooster", admit)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
        print("ready", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await runner.cleanup()

    _run_loop(main(), event_loop=event_loop)


def serve_machinery_only(*, port: int, metrics_port: int, cert: Path, key: Path, event_loop: str) -> None:
    """The real webhook with `shared` validation replaced by "no errors": what our own machinery costs.

    Bench-only: it separates the cost of the HTTP/TLS/admission plumbing from that of the rules.
    """
    sys.path.insert(0, str(ROOT))
    import webhook.admission
    from webhook.main import serve
    from webhook.settings import Settings

    def no_errors(obj: Any, *, old: Any = None) -> list[Any]:
        return []

    setattr(webhook.admission, "validate_modelbooster", no_errors)  # noqa: B010 - not a re-export
    settings = Settings(
        bind_address="127.0.0.1",
        port=port,
        metrics_bind_address="127.0.0.1",
        metrics_port=metrics_port,
        tls_cert_file=cert,
        tls_private_key_file=key,
    )
    _run_loop(serve(settings), event_loop=event_loop)


def _run_loop(main: Any, *, event_loop: str) -> None:
    if event_loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            uvloop.run(main)
            return
    asyncio.run(main)


# ------------------------------------------------------------------------------------------------ load clients


@dataclass
class Load:
    target: str
    connections: int
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    client: str
    # The server's CPU time per request during the run (microseconds), from /proc/<pid>/stat.
    server_user_us: float = 0.0
    server_sys_us: float = 0.0


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) / _CLOCK_TICKS, int(fields[12]) / _CLOCK_TICKS


def _with_server_cpu(load: Load, *, before: tuple[float, float], after: tuple[float, float]) -> Load:
    if load.requests:
        load.server_user_us = round((after[0] - before[0]) / load.requests * 1e6, 1)
        load.server_sys_us = round((after[1] - before[1]) / load.requests * 1e6, 1)
    return load


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not match:
        raise ValueError(f"cannot read wrk latency {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def run_wrk(*, url: str, body: Path, connections: int, duration: float, target: str) -> Load:
    script = body.with_suffix(".lua")
    script.write_text(
        f'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f'local f = io.open("{body}", "rb")\nwrk.body = f:read("*a")\nf:close()\n'
    )
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{int(duration)}s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    requests = int(re.search(r"(\d+) requests in ([\d.]+)(m?s)", out).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"\s50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = int(bad.group(1)) if bad else 0
    if socket_errors:
        errors += sum(int(value) for value in socket_errors.groups())
    return Load(target, connections, requests, duration, rps, p50, p99, errors, "wrk")


def client_load(*, url: str, body: bytes, connections: int, duration: float, cafile: str) -> dict[str, Any]:
    """Run inside its own process: `connections` keep-alive workers posting back to back."""
    import aiohttp

    async def main() -> dict[str, Any]:
        context = ssl.create_default_context(cafile=cafile)
        latencies: list[float] = []
        errors = 0
        connector = aiohttp.TCPConnector(ssl=context, limit=connections)
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=connector) as session:

            async def worker(until: float) -> None:
                nonlocal errors
                while time.perf_counter() < until:
                    started = time.perf_counter()
                    async with session.post(url, data=body, headers=headers) as response:
                        await response.read()
                        if response.status != 200:
                            errors += 1
                    latencies.append(time.perf_counter() - started)

            await asyncio.gather(*(worker(time.perf_counter() + 1.0) for _ in range(connections)))  # warm-up
            latencies.clear()
            started = time.perf_counter()
            await asyncio.gather(*(worker(started + duration) for _ in range(connections)))
            elapsed = time.perf_counter() - started
        ordered = sorted(latencies)
        return {
            "requests": len(ordered),
            "seconds": elapsed,
            "rps": len(ordered) / elapsed,
            "p50_ms": statistics.median(ordered) * 1000,
            "p99_ms": ordered[int(len(ordered) * 0.99)] * 1000,
            "errors": errors,
        }

    result: dict[str, Any] = {}
    _run_loop_result(main(), result)
    return result


def _run_loop_result(main: Any, into: dict[str, Any]) -> None:
    async def wrap() -> None:
        into.update(await main)

    _run_loop(wrap(), event_loop="auto")


def run_aiohttp_client(*, url: str, body: Path, connections: int, duration: float, target: str, cafile: Path) -> Load:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--client-load",
            url,
            "--body",
            str(body),
            "--cafile",
            str(cafile),
            "--connections",
            str(connections),
            "--duration",
            str(duration),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = json.loads(out)
    return Load(
        target,
        connections,
        data["requests"],
        data["seconds"],
        data["rps"],
        data["p50_ms"],
        data["p99_ms"],
        data["errors"],
        "aiohttp",
    )


# ------------------------------------------------------------------------------------------------ orchestration


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(url: str, *, context: ssl.SSLContext | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1, context=context) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} never became ready")


def _post(url: str, body: bytes, context: ssl.SSLContext) -> dict[str, Any]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5, context=context) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def _rss_mb(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of a process in MiB, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _spawn(command: list[str], stack: ExitStack) -> subprocess.Popen[str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)

    def stop() -> None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    stack.callback(stop)
    return process


def write_certificates(work: Path) -> None:
    """ca.crt, tls.crt and tls.key in `work`, the serving pair valid for 127.0.0.1."""
    sys.path.insert(0, str(ROOT))
    from certs.authority import create_ca, issue_serving_cert

    ca = create_ca()
    pair = issue_serving_cert(ca=ca, service="modelbooster-webhook", namespace="bench", extra_sans=["127.0.0.1"])
    for name, data in (("ca.crt", ca.cert_pem), ("tls.crt", pair.cert_pem), ("tls.key", pair.key_pem)):
        (work / name).write_bytes(data)


def main_bench(args: argparse.Namespace) -> int:
    use_wrk = args.client == "wrk" or (args.client == "auto" and shutil.which("wrk") is not None)
    if args.client == "wrk" and shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install wrk), use --client aiohttp", file=sys.stderr)
        return 2
    connection_counts = [int(value) for value in args.connections.split(",")]
    with tempfile.TemporaryDirectory(prefix="webhook-bench-") as scratch, ExitStack() as stack:
        work = Path(scratch)
        write_certificates(work)
        bodies = {
            "validate": work / "validate.json",
            "mutate": work / "mutate.json",
        }
        bodies["validate"].write_text(json.dumps(admission_review(two_backend_model_booster(defaulted=True))))
        bodies["mutate"].write_text(json.dumps(admission_review(two_backend_model_booster(defaulted=False))))

        webhook_port, metrics_port, bare_port = _free_port(), _free_port(), _free_port()
        machinery_port, machinery_metrics_port = _free_port(), _free_port()
        entry = ["modelbooster.cli", "webhook"] if args.entry == "cli" else ["webhook"]
        webhook = _spawn(
            [
                sys.executable,
                "-m",
                *entry,
                "--bind-address=127.0.0.1",
                f"--port={webhook_port}",
                "--metrics-bind-address=127.0.0.1",
                f"--metrics-port={metrics_port}",
                f"--tls-cert-file={work / 'tls.crt'}",
                f"--tls-private-key-file={work / 'tls.key'}",
                f"--event-loop={args.event_loop}",
            ],
            stack,
        )
        bare = _spawn(
            [
                sys.executable,
                __file__,
                "--serve-bare",
                str(bare_port),
                "--cert",
                str(work / "tls.crt"),
                "--key",
                str(work / "tls.key"),
                "--event-loop",
                args.event_loop,
            ],
            stack,
        )
        machinery = _spawn(
            [
                sys.executable,
                __file__,
                "--serve-machinery",
                str(machinery_port),
                "--metrics-port",
                str(machinery_metrics_port),
                "--cert",
                str(work / "tls.crt"),
                "--key",
                str(work / "tls.key"),
                "--event-loop",
                args.event_loop,
            ],
            stack,
        )
        _wait_ready(f"http://127.0.0.1:{metrics_port}/readyz")
        _wait_ready(f"http://127.0.0.1:{machinery_metrics_port}/readyz")
        client_context = ssl.create_default_context(cafile=str(work / "ca.crt"))
        urls = {
            "bare": f"https://127.0.0.1:{bare_port}/validate/modelbooster",
            "validate": f"https://127.0.0.1:{webhook_port}/validate/modelbooster",
            "machinery": f"https://127.0.0.1:{machinery_port}/validate/modelbooster",
            "mutate": f"https://127.0.0.1:{webhook_port}/mutate/modelbooster",
        }
        _wait_post(urls["bare"], bodies["validate"].read_bytes(), client_context)
        # The load must exercise the real paths: an allowed validation and a non-empty patch.
        checked = _post(urls["validate"], bodies["validate"].read_bytes(), client_context)["response"]
        if checked.get("allowed") is not True:
            raise RuntimeError(f"the validate payload is not allowed: {checked}")
        mutated = _post(urls["mutate"], bodies["mutate"].read_bytes(), client_context)["response"]
        if mutated.get("patch") in (None, "W10="):
            raise RuntimeError(f"the mutate payload produced no patch: {mutated}")

        idle_rss, _ = _rss_mb(webhook.pid)
        pids = {"bare": bare.pid, "machinery": machinery.pid, "validate": webhook.pid, "mutate": webhook.pid}
        load_before = [round(value, 2) for value in os.getloadavg()]
        print(f"load average before: {' '.join(f'{value:.2f}' for value in load_before)}", flush=True)
        rounds: dict[tuple[str, int], list[Load]] = {}
        for round_number in range(1, args.rounds + 1):
            for connections in connection_counts:
                for target, body in TARGETS:
                    if use_wrk:
                        # wrk has no warm-up option: a short unmeasured run first.
                        run_wrk(url=urls[target], body=bodies[body], connections=connections, duration=1, target=target)
                        before = _cpu_seconds(pids[target])
                        load = run_wrk(
                            url=urls[target],
                            body=bodies[body],
                            connections=connections,
                            duration=args.duration,
                            target=target,
                        )
                        load = _with_server_cpu(load, before=before, after=_cpu_seconds(pids[target]))
                    else:
                        load = run_aiohttp_client(
                            url=urls[target],
                            body=bodies[body],
                            connections=connections,
                            duration=args.duration,
                            target=target,
                            cafile=work / "ca.crt",
                        )
                    rounds.setdefault((target, connections), []).append(load)
                    print(
                        f"round {round_number}  {target:>9}  c={connections:<3} {load.rps:8.0f} req/s"
                        f"  p50 {load.p50_ms:6.2f} ms  p99 {load.p99_ms:6.2f} ms{_cpu_text(load)}"
                        f"  errors {load.errors}  ({load.client})",
                        flush=True,
                    )
        results = [_median_round(loads) for loads in rounds.values()]
        rss, peak = _rss_mb(webhook.pid)
    return _report(
        results,
        rss_mb=rss,
        peak_rss_mb=peak,
        idle_rss_mb=idle_rss,
        args=args,
        client="wrk" if use_wrk else "aiohttp",
        all_rounds=[asdict(load) for loads in rounds.values() for load in loads],
        load_before=load_before,
    )


def _cpu_text(load: Load) -> str:
    if not load.server_user_us:
        return ""  # measured with wrk only (the aiohttp client's warm-up is not counted apart)
    return f"  server CPU/request {load.server_user_us:5.0f} + {load.server_sys_us:3.0f} us"


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        # Other work on the machine skews every figure; the load average says how much there was.
        "load_average_at_end": [round(value, 2) for value in os.getloadavg()],
    }


def _median_round(loads: list[Load]) -> Load:
    """The round with the median throughput (its own latencies with it, not a mix of rounds)."""
    ordered = sorted(loads, key=lambda load: load.rps)
    return ordered[len(ordered) // 2]


def _wait_post(url: str, body: bytes, context: ssl.SSLContext) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            _post(url, body, context)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _report(
    results: list[Load],
    *,
    rss_mb: float,
    peak_rss_mb: float,
    idle_rss_mb: float,
    args: argparse.Namespace,
    client: str,
    all_rounds: list[dict[str, Any]],
    load_before: list[float],
) -> int:
    by_key = {(load.target, load.connections): load for load in results}
    summary: dict[str, Any] = {"ratios": {}, "cpu_ratios": {}, "goals": {}}
    print()
    print(f"median of {args.rounds} round(s), {args.duration:.0f} s each, client {client}:")
    for load in sorted(results, key=lambda item: (item.connections, item.target)):
        print(
            f"  {load.target:>9}  c={load.connections:<3} {load.rps:8.0f} req/s  p50 {load.p50_ms:6.2f} ms"
            f"  p99 {load.p99_ms:6.2f} ms{_cpu_text(load)}"
        )
    print(f"{'connections':>11} {'validate/bare':>14} {'mutate/bare':>12} {'machinery/bare':>15}   (throughput)")
    for connections in sorted({load.connections for load in results}):
        bare = by_key[("bare", connections)]
        targets = ("validate", "mutate", "machinery")
        ratios = {target: by_key[(target, connections)].rps / bare.rps for target in targets}
        summary["ratios"][str(connections)] = {target: round(ratio, 3) for target, ratio in ratios.items()}
        print(f"{connections:>11} {ratios['validate']:>14.2f} {ratios['mutate']:>12.2f} {ratios['machinery']:>15.2f}")
        if bare.server_user_us:
            # What the ratio would be if the server's CPU time were all that counted: less sensitive to
            # other work on the machine than throughput (the client's share and the kernel's scheduling).
            cpu = {target: _cpu_us(bare) / _cpu_us(by_key[(target, connections)]) for target in ratios}
            summary["cpu_ratios"][str(connections)] = {target: round(ratio, 3) for target, ratio in cpu.items()}
            print(f"{'':>11} {cpu['validate']:>14.2f} {cpu['mutate']:>12.2f} {cpu['machinery']:>15.2f}   (server CPU)")
    print(f"webhook RSS: idle {idle_rss_mb:.1f} MiB, after the runs {rss_mb:.1f} MiB, peak {peak_rss_mb:.1f} MiB")
    load_after = [round(value, 2) for value in os.getloadavg()]
    print(f"load average before {' '.join(map(str, load_before))}, after {' '.join(map(str, load_after))}")
    goals: dict[str, bool] = {}
    for connections, goal in GOAL_RATIOS.items():
        if str(connections) in summary["ratios"]:
            ratio = summary["ratios"][str(connections)]["validate"]
            goals[f"validate >= {goal} x bare at c={connections}"] = ratio >= goal
    if ("validate", 16) in by_key:
        goals[f"validate p99 <= {GOAL_P99_MS:g} ms at c=16"] = by_key[("validate", 16)].p99_ms <= GOAL_P99_MS
    goals[f"peak RSS <= {GOAL_RSS_MB:g} MB"] = peak_rss_mb <= GOAL_RSS_MB
    for goal, met in goals.items():
        print(f"  [{'met' if met else 'not met'}] {goal}")
    summary["goals"] = goals
    results_file: Path = args.results
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": {**machine(), "load_average_before": load_before},
                "client": client,
                "duration_s": args.duration,
                "event_loop": args.event_loop,
                "entry": args.entry,
                "rounds": args.rounds,
                "loads": [asdict(load) for load in results],
                "all_rounds": all_rounds,
                "idle_rss_mb": round(idle_rss_mb, 1),
                "rss_mb": round(rss_mb, 1),
                "peak_rss_mb": round(peak_rss_mb, 1),
                **summary,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written {results_file}")
    return 0


def _cpu_us(load: Load) -> float:
    return load.server_user_us + load.server_sys_us


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported (default 3)")
    parser.add_argument(
        "--entry",
        choices=("cli", "module"),
        default="cli",
        help="start the webhook as `modelbooster webhook` (cli, as deployed) or `python -m webhook` (module)",
    )
    parser.add_argument("--connections", default="1,16", help="comma-separated connection counts (default 1,16)")
    parser.add_argument("--client", choices=("auto", "wrk", "aiohttp"), default="auto")
    parser.add_argument("--event-loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"where to write the JSON (default {RESULTS})")
    # Internal modes: the bare server and the aiohttp load client run as their own processes.
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--serve-machinery", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cert", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--key", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--client-load", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--body", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cafile", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare is not None:
        serve_bare(port=args.serve_bare, cert=args.cert, key=args.key, event_loop=args.event_loop)
        return 0
    if args.serve_machinery is not None:
        serve_machinery_only(
            port=args.serve_machinery,
            metrics_port=args.metrics_port,
            cert=args.cert,
            key=args.key,
            event_loop=args.event_loop,
        )
        return 0
    if args.client_load is not None:
        result = client_load(
            url=args.client_load,
            body=args.body.read_bytes(),
            connections=int(args.connections),
            duration=args.duration,
            cafile=args.cafile,
        )
        print(json.dumps(result))
        return 0
    return main_bench(args)


if __name__ == "__main__":
    sys.exit(main())
