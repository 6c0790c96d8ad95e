"""The preStop drain script each engine's pods run, run here by `sh` against a loopback /metrics that serves what
the engine's release exports (tests/engines): it returns as soon as nothing runs or waits, keeps waiting while
anything does (on any engine core or scheduler rank), and gives up when the metrics are unreachable.

Two things are changed for the test only: the script's log goes to a file instead of PID 1's stdout, and its
`sleep 5` sleeps 0.05 s (a `sleep` earlier on PATH)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shared.engines.engine import Engine, drain_script
from shared.engines.sglang.serving import SGLANG
from shared.engines.vllm.serving import VLLM
from tests.engines import sglang_0_5_23, vllm_0_33_0
from tests.engines.table import EngineTable, PodState, exposition
from tests.unit.engines.support import entry_engine, render, sglang_doc
from tests.unit.synthesis.support import vllm_doc

MODEL = "m"


@dataclass
class Metrics:
    """What the fake /metrics serves: each engine core's (or rank's) state, by the label that tells them apart."""

    table: EngineTable
    cores: dict[str, PodState] = field(default_factory=dict)
    core_label: str = "engine"
    shares: dict[str, float] | None = None
    requests: int = 0

    def text(self) -> str:
        return "".join(exposition(self.table, state, model=MODEL, extra={self.core_label: core}, shares=self.shares)
                       for core, state in self.cores.items())  # fmt: skip


@dataclass(frozen=True)
class Case:
    engine: Engine
    table: EngineTable
    core_label: str  # what tells two engine cores' (ranks') lines apart


CASES = {
    "vLLM": Case(VLLM, vllm_0_33_0.TABLE, "engine"),  # data parallelism: one engine core per rank
    "SGLang": Case(SGLANG, sglang_0_5_23.TABLE, "tp_rank"),
}


@pytest.fixture
def serve() -> Iterator[Callable[[Metrics], int]]:
    servers: list[ThreadingHTTPServer] = []

    def start(metrics: Metrics) -> int:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                metrics.requests += 1
                body = metrics.text().encode()
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@dataclass
class Drain:
    process: subprocess.Popen[bytes]
    log: Path

    def wait(self, timeout: float = 5.0) -> str:
        assert self.process.wait(timeout=timeout) == 0
        return self.log.read_text()


@pytest.fixture
def drain(tmp_path: Path) -> Iterator[Callable[[Engine, int], Drain]]:
    if shutil.which("curl") is None:
        pytest.skip("the drain script calls curl, which this machine lacks")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fast_sleep = bin_dir / "sleep"
    fast_sleep.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 0.05\n")
    fast_sleep.chmod(0o755)
    started: list[subprocess.Popen[bytes]] = []

    def run(engine: Engine, port: int) -> Drain:
        log = tmp_path / f"drain-{len(started)}.log"
        script = engine.drain_script(port).replace("/proc/1/fd/1", str(log))
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
        process = subprocess.Popen(["sh", "-c", script], env=env)
        started.append(process)
        return Drain(process, log)

    yield run
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.01)


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_an_idle_engine_is_stopped_after_one_look(case: Case, serve: Any, drain: Any) -> None:
    """Kthena's vLLM script never saw vLLM 0.33.0 idle: `vllm:num_requests_waiting_by_reason` matched its prefix,
    and the lines it read together were never the text "0.0". It waited out the grace period at every stop."""
    metrics = Metrics(case.table, {"0": PodState()}, case.core_label)
    running = drain(case.engine, serve(metrics))
    assert "safe to terminate" in running.wait()
    assert metrics.requests == 1


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_requests_in_flight_on_any_core_are_waited_for(case: Case, serve: Any, drain: Any) -> None:
    metrics = Metrics(case.table, {"0": PodState(), "1": PodState(running=2, waiting=1)}, case.core_label)
    running = drain(case.engine, serve(metrics))
    until(lambda: metrics.requests >= 3)
    assert running.process.poll() is None
    metrics.cores["1"] = PodState(waiting=1)  # the running ones finished; one still waits
    seen = metrics.requests
    until(lambda: metrics.requests >= seen + 2)
    assert running.process.poll() is None
    metrics.cores["1"] = PodState()
    log = running.wait()
    assert "Running: 2, Waiting: 1" in log
    assert "Running: 0, Waiting: 1" in log
    assert log.rstrip().endswith("safe to terminate")


def test_requests_deferred_by_vllm_are_waited_for(serve: Any, drain: Any) -> None:
    """vLLM 0.33.0 counts a deferred request both in `vllm:num_requests_waiting` and in its `_by_reason` parts:
    it is waited for once, by the total."""
    metrics = Metrics(vllm_0_33_0.TABLE, {"0": PodState(waiting=1, deferred=1)})
    running = drain(VLLM, serve(metrics))
    until(lambda: metrics.requests >= 2)
    metrics.cores["0"] = PodState()
    assert "Running: 0, Waiting: 1" in running.wait()


def test_sglangs_priority_breakdown_is_waited_for_and_counted_once(serve: Any, drain: Any) -> None:
    """With priority scheduling SGLang exports each queue gauge's total under `priority=""` and its parts under
    each priority: the total is what counts."""
    metrics = Metrics(sglang_0_5_23.TABLE, {"0": PodState(running=2, waiting=4)}, "tp_rank",
                      shares={"0": 0.5, "1": 0.5})  # fmt: skip
    running = drain(SGLANG, serve(metrics))
    until(lambda: metrics.requests >= 2)
    assert running.process.poll() is None
    metrics.cores["0"] = PodState()
    log = running.wait()
    assert "Running: 2, Waiting: 4" in log
    assert "safe to terminate" in log


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_unreachable_metrics_end_the_drain_at_once(case: Case, serve: Any, drain: Any) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        closed = int(probe.getsockname()[1])
    assert "Metrics endpoint unavailable" in drain(case.engine, closed).wait()
    # Something answers, but not with the engine's gauges (another process took the port): the same.
    assert "Metrics endpoint unavailable" in drain(case.engine, serve(Metrics(case.table))).wait()


def test_the_rendered_pods_run_the_engines_script() -> None:
    for engine, children in ((VLLM, render(vllm_doc())), (SGLANG, render(sglang_doc()))):
        command = entry_engine(children)["lifecycle"]["preStop"]["exec"]["command"]
        assert command[2] == engine.drain_script(engine.default_port), engine.name


def test_a_gauge_name_is_never_a_pattern() -> None:
    with pytest.raises(ValueError, match="regular-expression"):
        drain_script(running="vllm:num.*", waiting="vllm:num_requests_waiting")
    with pytest.raises(ValueError, match="regular-expression"):
        drain_script(running="a", waiting="b", parts_label="priority|x")
