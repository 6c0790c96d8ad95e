"""Hostile clients against `modelbooster webhook`: memory, latency of a valid request, answers, logs.

    python bench/webhook_abuse.py [--stalled 150] [--stalled-bytes 3100000] [--errors 60000]
                                  [--hold 3] [--entry cli|module] [--event-loop auto|asyncio|uvloop]
                                  [--results bench/results/webhook_abuse.json]

Starts the webhook as deployed (`modelbooster webhook`, default settings, text logs at info) and runs,
one after the other, with the attackers in a separate process:
1. stalled bodies: `--stalled` TLS connections each announce `--stalled-bytes` bytes, send all but the
   last one and stall. Reports the webhook's RSS (peak while they stall, and after they have gone), what
   each connection got (answered at once, read then timed out, ...), how long the server kept the held
   ones open, and the latency of a valid request meanwhile;
2. a review with `--errors` invalid env entries, alone (answer size, server CPU, time) and three at a time
   in flight without pause (the latency of a valid request meanwhile); the same for a review just under
   the webhook's value bound (whose denial goes through validation), and for a 3 MB list of a million
   one-byte values;
3. clients that hang up mid-body: the HTTP codes counted and whether anything was logged as an error;
4. a `config` nested 300 levels: the answer of /mutate and of /validate.
Every valid request is timed on a fresh TLS connection, as seen by a new client. Prints the figures and
the goals, and writes them as JSON. Run it on a quiet machine: the attackers share its cores.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from webhook_bench import (
    _free_port,
    _rss_mb,
    _run_loop,
    _wait_ready,
    admission_review,
    machine,
    two_backend_model_booster,
    write_certificates,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "webhook_abuse.json"
VALIDATE = "/validate/modelbooster"
MUTATE = "/mutate/modelbooster"
GOAL_RSS_MIB = 256.0
GOAL_LATENCY_S = 1.0
GOAL_ANSWER_BYTES = 256 * 1024
# Just under the webhook's bound of 50,000 values in one object: each bad env entry is 3 values.
UNDER_BOUND_ENTRIES = 15_000


# ------------------------------------------------------------------------------------------------ payloads


def valid_review() -> bytes:
    return json.dumps(admission_review(two_backend_model_booster(defaulted=True))).encode()


def env_errors_review(entries: int) -> bytes:
    """A review whose object has `entries` env entries, each with a number where a string belongs."""
    obj = two_backend_model_booster(defaulted=True)
    obj["spec"]["backends"][0]["env"] = [{"name": f"VAR_{index}", "value": index} for index in range(entries)]
    return json.dumps(admission_review(obj)).encode()


def tiny_values_review(size: int) -> bytes:
    """About `size` bytes of `env: [0,0,0,...]`: the most values (and errors) a body of that size holds."""
    obj = two_backend_model_booster(defaulted=True)
    obj["spec"]["backends"][0]["env"] = [0] * (size // 2)
    return json.dumps(admission_review(obj), separators=(",", ":")).encode()


def deep_review(depth: int) -> bytes:
    obj = two_backend_model_booster(defaulted=True)
    obj["spec"]["backends"][0]["workers"][0]["config"] = "__DEEP__"
    text = json.dumps(admission_review(obj))
    return text.replace('"__DEEP__"', '{"a":' * depth + "1" + "}" * depth).encode()


# ------------------------------------------------------------------------------------------------ attackers
# Each runs in its own process (`--attacker MODE`), prints one JSON line when its load is in place
# ("ready"), and one with its results when stopped (a line on stdin) or done.


def _client_context(cafile: str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile)


def _request_head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


async def _status_of(reader: asyncio.StreamReader) -> int | None:
    line = await reader.readline()
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


async def _stall_one(
    *, port: int, context: ssl.SSLContext, length: int, max_hold: float, outcome: dict[str, Any]
) -> None:
    """Announce `length` bytes, send all but the last, wait for the server to answer or hang up."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    except OSError as error:
        outcome["error"] = type(error).__name__
        return
    answered = asyncio.ensure_future(_status_of(reader))
    body = memoryview(b"x" * (length - 1))
    try:
        writer.write(_request_head(VALIDATE, length))
        for offset in range(0, len(body), 65536):
            if answered.done():
                break
            piece = body[offset : offset + 65536]
            writer.write(piece)
            await writer.drain()
            outcome["sent"] = offset + len(piece)
        if outcome["sent"] == len(body):
            outcome["all_sent_after"] = round(loop.time() - started, 3)
    except (OSError, ssl.SSLError):
        pass
    try:
        outcome["status"] = await asyncio.wait_for(answered, timeout=max_hold)
        await asyncio.wait_for(reader.read(), timeout=max_hold)  # until the server closes
        outcome["closed_after"] = round(loop.time() - started, 3)
    except (TimeoutError, OSError, ssl.SSLError, ValueError):
        pass
    writer.transport.abort()


async def attack_stalled(*, port: int, cafile: str, connections: int, length: int, max_hold: float) -> None:
    context = _client_context(cafile)
    outcomes: list[dict[str, Any]] = [
        {"status": None, "sent": 0, "all_sent_after": None, "closed_after": None} for _ in range(connections)
    ]
    tasks = [
        asyncio.ensure_future(_stall_one(port=port, context=context, length=length, max_hold=max_hold, outcome=outcome))
        for outcome in outcomes
    ]
    # Ready once no byte has moved for a while: every connection has sent what the server lets it send.
    sent, still_since = -1, time.monotonic()
    while not all(task.done() for task in tasks) and time.monotonic() - still_since < 1.5:
        await asyncio.sleep(0.1)
        now_sent = sum(outcome["sent"] for outcome in outcomes)
        if now_sent != sent:
            sent, still_since = now_sent, time.monotonic()
    print(json.dumps({"ready": True}), flush=True)
    await asyncio.gather(*tasks)
    print(json.dumps({"outcomes": outcomes}), flush=True)


async def attack_heavy(*, port: int, cafile: str, body: bytes, connections: int) -> None:
    """`connections` clients that post the same body again as soon as it is answered, until stopped."""
    import aiohttp

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(sys.stdin.fileno(), stop.set)
    answered = 0
    sizes: list[int] = []

    async def client() -> None:
        nonlocal answered
        connector = aiohttp.TCPConnector(ssl=_client_context(cafile))
        async with aiohttp.ClientSession(connector=connector) as session:
            while not stop.is_set():
                async with session.post(
                    f"https://127.0.0.1:{port}{VALIDATE}", data=body, headers={"Content-Type": "application/json"}
                ) as response:
                    sizes.append(len(await response.read()))
                    answered += 1

    tasks = [asyncio.ensure_future(client()) for _ in range(connections)]
    print(json.dumps({"ready": True}), flush=True)
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps({"answered": answered, "answer_bytes": max(sizes, default=0)}), flush=True)


async def attack_hangup(*, port: int, cafile: str, connections: int, length: int) -> None:
    """Clients that send half of the announced body, then close the connection."""
    context = _client_context(cafile)

    async def one() -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        writer.write(_request_head(VALIDATE, length) + b"x" * (length // 2))
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.transport.abort()

    await asyncio.gather(*(one() for _ in range(connections)))
    print(json.dumps({"done": connections}), flush=True)


# ------------------------------------------------------------------------------------------------ measuring


class Webhook:
    """The webhook process under test, and how to reach and measure it."""

    def __init__(self, *, work: Path, stack: ExitStack, entry: str, event_loop: str) -> None:
        self.port, self.metrics_port = _free_port(), _free_port()
        self.cafile = str(work / "ca.crt")
        self.log_file = work / "webhook.log"
        module = ["modelbooster.cli", "webhook"] if entry == "cli" else ["webhook"]
        log = self.log_file.open("w")
        stack.callback(log.close)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                *module,
                "--bind-address=127.0.0.1",
                f"--port={self.port}",
                "--metrics-bind-address=127.0.0.1",
                f"--metrics-port={self.metrics_port}",
                f"--tls-cert-file={work / 'tls.crt'}",
                f"--tls-private-key-file={work / 'tls.key'}",
                f"--event-loop={event_loop}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        stack.callback(self._stop)
        self.context = _client_context(self.cafile)
        _wait_ready(f"http://127.0.0.1:{self.metrics_port}/readyz")

    def _stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def post(self, path: str, body: bytes, *, timeout: float = 30.0) -> tuple[int, bytes, float]:
        """(status, answer, seconds) of one request on a fresh TLS connection."""
        started = time.perf_counter()
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=timeout)
        try:
            connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = response.read()
            return response.status, answer, time.perf_counter() - started
        finally:
            connection.close()

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        return _rss_mb(self.process.pid)[0]

    def peak_rss_mib(self) -> float:
        return _rss_mb(self.process.pid)[1]

    def metric(self, name: str, **labels: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
        wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            series, value = line.rsplit(" ", 1)
            got = series[len(name) :].strip("{}")
            if all(part in got.split(",") for part in wanted.split(",") if part):
                total += float(value)
        return total


class Attacker:
    """One attacker process: started, awaited until its load is in place, stopped, results read."""

    def __init__(self, stack: ExitStack, *arguments: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        stack.callback(self.process.kill)

    def line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        text = self.process.stdout.readline()
        if not text:
            raise RuntimeError(f"the attacker process ended without an answer ({self.process.args!r})")
        answer: dict[str, Any] = json.loads(text)
        return answer

    def stop(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("stop\n")
        self.process.stdin.flush()
        return self.line()


def latencies(webhook: Webhook, body: bytes, *, seconds: float, gap: float = 0.2) -> dict[str, Any]:
    """Valid requests one after the other for `seconds`: their latency, and what they were answered."""
    samples: list[float] = []
    statuses: dict[str, int] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or not samples:
        try:
            status, answer, elapsed = webhook.post(VALIDATE, body)
            allowed = status == 200 and json.loads(answer)["response"]["allowed"] is True
            key = "allowed" if allowed else str(status)
        except OSError as error:
            key, elapsed = type(error).__name__, float("nan")
        statuses[key] = statuses.get(key, 0) + 1
        if key == "allowed":
            samples.append(elapsed)
        time.sleep(gap)
    return {
        "answers": statuses,
        "median_s": round(statistics.median(samples), 4) if samples else None,
        "max_s": round(max(samples), 4) if samples else None,
    }


def sample_rss(webhook: Webhook, *, until: Callable[[], bool], into: list[float]) -> None:
    while not until():
        into.append(webhook.rss_mib())
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------------ scenarios


def scenario_stalled(webhook: Webhook, stack: ExitStack, args: argparse.Namespace, valid: bytes) -> dict[str, Any]:
    idle = webhook.rss_mib()
    attacker = Attacker(
        stack,
        "--attacker=stalled",
        f"--port={webhook.port}",
        f"--cafile={webhook.cafile}",
        f"--stalled={args.stalled}",
        f"--stalled-bytes={args.stalled_bytes}",
        f"--max-hold={args.max_hold}",
    )
    attacker.line()  # every connection has sent what it will send
    rss: list[float] = []
    done = threading.Event()
    sampler = threading.Thread(target=sample_rss, kwargs={"webhook": webhook, "until": done.is_set, "into": rss})
    sampler.start()
    during = latencies(webhook, valid, seconds=args.hold)
    done.set()
    sampler.join()
    peak = webhook.peak_rss_mib()
    outcomes: list[dict[str, Any]] = attacker.line()["outcomes"]
    time.sleep(2.0)
    after = webhook.rss_mib()
    kinds: dict[str, int] = {}
    held_open: list[float] = []
    for outcome in outcomes:
        status = outcome["status"]
        kind = f"answered {status}" if status else "no answer"
        kinds[kind] = kinds.get(kind, 0) + 1
        if outcome["all_sent_after"] is not None and outcome["closed_after"] is not None:
            held_open.append(outcome["closed_after"] - outcome["all_sent_after"])
    return {
        "connections": args.stalled,
        "bytes_each": args.stalled_bytes,
        "idle_rss_mib": round(idle, 1),
        "peak_rss_mib": round(max([peak, *rss]), 1),
        "rss_after_they_left_mib": round(after, 1),
        "outcomes": kinds,
        "fully_sent_then_held_s": round(max(held_open), 2) if held_open else None,
        "still_open_after_max_hold": sum(1 for outcome in outcomes if outcome["closed_after"] is None),
        "valid_request_during": during,
    }


def scenario_heavy(
    webhook: Webhook, stack: ExitStack, args: argparse.Namespace, *, body: bytes, work: Path, name: str
) -> dict[str, Any]:
    cpu = webhook.cpu_seconds()
    status, answer, alone = webhook.post(VALIDATE, body, timeout=120)
    cpu = webhook.cpu_seconds() - cpu
    response = json.loads(answer)["response"] if status == 200 else {}
    body_file = work / f"{name}.json"
    body_file.write_bytes(body)
    attacker = Attacker(
        stack,
        "--attacker=heavy",
        f"--port={webhook.port}",
        f"--cafile={webhook.cafile}",
        f"--body={body_file}",
        "--connections=3",
    )
    attacker.line()
    time.sleep(0.5)  # the three are in flight
    during = latencies(webhook, _VALID, seconds=args.hold)
    stopped = attacker.stop()
    time.sleep(1.0)  # the requests the stop cut off mid-body are counted before the next scenario
    return {
        "request_bytes": len(body),
        "status": status,
        "answer_bytes": len(answer),
        "code": response.get("status", {}).get("code"),
        "causes": len(response.get("status", {}).get("details", {}).get("causes", [])),
        "message_head": response.get("status", {}).get("message", answer.decode(errors="replace"))[:160],
        "alone_s": round(alone, 3),
        "server_cpu_s": round(cpu, 3),
        "three_in_flight_answered": stopped["answered"],
        "valid_request_during": during,
    }


_VALID = valid_review()


def scenario_hangup(webhook: Webhook, stack: ExitStack) -> dict[str, Any]:
    dropped = "modelbooster_webhook_requests_dropped_total"
    before = {
        "500": webhook.metric("controller_runtime_webhook_requests_total", code="500"),
        "client_disconnected": webhook.metric(dropped, reason="client_disconnected"),
    }
    attacker = Attacker(
        stack, "--attacker=hangup", f"--port={webhook.port}", f"--cafile={webhook.cafile}", "--connections=20"
    )
    attacker.line()
    time.sleep(1.0)
    return {
        "clients": 20,
        "counted_code_500": webhook.metric("controller_runtime_webhook_requests_total", code="500") - before["500"],
        "counted_client_disconnected": webhook.metric(dropped, reason="client_disconnected")
        - before["client_disconnected"],
    }


def scenario_deep(webhook: Webhook) -> dict[str, Any]:
    body = deep_review(300)
    answers: dict[str, dict[str, Any]] = {}
    for path in (MUTATE, VALIDATE):
        status, answer, _ = webhook.post(path, body)
        response: dict[str, Any] = json.loads(answer)["response"] if status == 200 else {}
        answers[path] = {
            "http": status,
            "allowed": response.get("allowed"),
            "code": response.get("status", {}).get("code"),
            "message": response.get("status", {}).get("message", answer.decode(errors="replace"))[:300],
        }
    return {"depth": 300, "answers": answers, "same": answers[MUTATE] == answers[VALIDATE]}


def log_errors(webhook: Webhook) -> dict[str, int]:
    text = webhook.log_file.read_text(errors="replace")
    return {"tracebacks": text.count("Traceback"), "error_lines": sum(" ERROR " in line for line in text.splitlines())}


# ------------------------------------------------------------------------------------------------ main


def main_bench(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="webhook-abuse-") as scratch, ExitStack() as stack:
        work = Path(scratch)
        write_certificates(work)
        webhook = Webhook(work=work, stack=stack, entry=args.entry, event_loop=args.event_loop)
        status, _, _ = webhook.post(VALIDATE, _VALID)
        if status != 200:
            raise RuntimeError(f"the valid review was answered {status}")
        results: dict[str, Any] = {"baseline": latencies(webhook, _VALID, seconds=args.hold)}
        print(f"baseline: valid request {results['baseline']['median_s']} s (median)", flush=True)
        results["stalled_bodies"] = scenario_stalled(webhook, stack, args, _VALID)
        print(json.dumps(results["stalled_bodies"], indent=1), flush=True)
        for name, body in (
            (f"env_errors_{args.errors}", env_errors_review(args.errors)),
            (f"env_errors_{UNDER_BOUND_ENTRIES}", env_errors_review(UNDER_BOUND_ENTRIES)),
            ("tiny_values_3mb", tiny_values_review(3_000_000)),
        ):
            results[name] = scenario_heavy(webhook, stack, args, body=body, work=work, name=name)
            print(name, json.dumps(results[name], indent=1), flush=True)
        results["hangups"] = scenario_hangup(webhook, stack)
        results["deep_config"] = scenario_deep(webhook)
        results["logs"] = log_errors(webhook)
        results["rss_at_end_mib"] = round(webhook.rss_mib(), 1)
    return report(results, args)


def report(results: dict[str, Any], args: argparse.Namespace) -> int:
    stalled = results["stalled_bodies"]
    heavy = results[f"env_errors_{args.errors}"]
    baseline = results["baseline"]["median_s"] or 0.0
    goals = {
        f"RSS < {GOAL_RSS_MIB:.0f} MiB under {args.stalled} stalled bodies": stalled["peak_rss_mib"] < GOAL_RSS_MIB,
        f"valid request < {GOAL_LATENCY_S:.0f} s under stalled bodies": _answered_within(
            stalled["valid_request_during"], GOAL_LATENCY_S
        ),
        f"{args.errors}-error review answer <= {GOAL_ANSWER_BYTES // 1024} KB": heavy["answer_bytes"]
        <= GOAL_ANSWER_BYTES,
        f"three {args.errors}-error reviews delay a valid request < {GOAL_LATENCY_S:.0f} s": _answered_within(
            heavy["valid_request_during"], GOAL_LATENCY_S + baseline
        ),
        "a hang-up is neither a 5xx nor logged as an error": results["hangups"]["counted_code_500"] == 0
        and results["logs"]["tracebacks"] == 0
        and results["logs"]["error_lines"] == 0,
        "too-deep config: same 400 from /mutate and /validate": results["deep_config"]["same"]
        and results["deep_config"]["answers"][VALIDATE]["code"] == 400,
    }
    print()
    for goal, met in goals.items():
        print(f"  [{'ok' if met else 'MISSED'}] {goal}")
    output = Path(args.results)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": machine(),
                "entry": args.entry,
                "event_loop": args.event_loop,
                **results,
                "goals": goals,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written {output}")
    return 0


def _answered_within(during: dict[str, Any], seconds: float) -> bool:
    return during["max_s"] is not None and during["max_s"] < seconds and set(during["answers"]) == {"allowed"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--stalled", type=int, default=150, help="stalled connections (default 150)")
    parser.add_argument("--stalled-bytes", type=int, default=3_100_000, help="body each announces (default 3.1 MB)")
    parser.add_argument("--errors", type=int, default=60_000, help="invalid env entries of the big review")
    parser.add_argument("--hold", type=float, default=3.0, help="seconds of valid requests per attack (default 3)")
    parser.add_argument(
        "--max-hold", type=float, default=30.0, help="seconds a stalled connection waits for the server (default 30)"
    )
    parser.add_argument("--entry", choices=("cli", "module"), default="cli")
    parser.add_argument("--event-loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    parser.add_argument("--results", default=str(RESULTS), help="where to write the JSON results")
    # Internal: the attacker processes.
    parser.add_argument("--attacker", choices=("stalled", "heavy", "hangup"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cafile", help=argparse.SUPPRESS)
    parser.add_argument("--body", help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, default=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attacker == "stalled":
        attack = attack_stalled(
            port=args.port,
            cafile=args.cafile,
            connections=args.stalled,
            length=args.stalled_bytes,
            max_hold=args.max_hold,
        )
    elif args.attacker == "heavy":
        body = Path(args.body).read_bytes()
        attack = attack_heavy(port=args.port, cafile=args.cafile, body=body, connections=args.connections)
    elif args.attacker == "hangup":
        attack = attack_hangup(port=args.port, cafile=args.cafile, connections=args.connections, length=1_000_000)
    else:
        return main_bench(args)
    _run_loop(attack, event_loop=args.event_loop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
