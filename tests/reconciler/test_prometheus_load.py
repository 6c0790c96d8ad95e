"""The load queries against a real Prometheus server scraping fake vLLM pods on loopback.

Prometheus is not a Python package: Debian's `prometheus` package ships /usr/bin/prometheus (and promtool),
and .ci/run installs it. In CI (`CI` set) a missing binary FAILS this test; elsewhere it is skipped, saying
so and how to install it (`-ra` is in the project's pytest options).

Two fake engine pods of one model export their engine table's series (tests/engines/: vLLM 0.33.0, vLLM's
pre-0.11 names, SGLang 0.5.23) driven by a scripted load (requests finishing at a steady rate, lengths
alternating around a known mean); Prometheus scrapes them every 250 ms; the controller's default queries for
that engine (reconciler/inferno/load.py, shared/engines/) over a 2 s window must give the injected arrival
rate and length within 5 %.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

import aiohttp
import pytest
from aiohttp import web

from reconciler.inferno.load import LoadQueries, measure_load
from reconciler.inferno.prometheus import PrometheusClient, PrometheusSettings, QueryFailure
from reconciler.inferno.signals import ServerSignals, SignalQueries, measure_signals
from shared.engines.series import EngineSeries
from shared.engines.sglang.series import SGLANG
from shared.engines.vllm.series import VLLM
from tests.engines import sglang_0_5_23, vllm_0_33_0, vllm_pre_0_11
from tests.engines.table import EngineTable, PodState, exposition

INSTALL: Final = "apt-get install --no-install-recommends prometheus (Debian/Ubuntu)"
NAMESPACE: Final = "serving"
MODEL: Final = "llama-3-8b"
PODS: Final = 2
# 6,000 requests/min in all: a window of 2 s then holds ~100 requests per pod, so a counter's whole steps
# (one request) stay under 1 % of what rate() sees.
REQUESTS_PER_SECOND_PER_POD: Final = 50.0
LENGTHS: Final = (300, 700)  # alternating: 500 tokens per request on average
TICK: Final = 0.05


def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is not None:
        return found
    missing = f"prometheus is not installed, so the load queries are NOT checked against it; install it ({INSTALL})"
    if os.environ.get("CI"):
        pytest.fail(f"{missing}. CI must run this check.", pytrace=False)
    pytest.skip(missing)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_prometheus(tmp_path: Path, config: str) -> Iterator[str]:
    """A real Prometheus with `config` (YAML text) on a free loopback port, its data and log in `tmp_path`;
    yields its URL and stops it."""
    binary = prometheus_binary()
    port = free_port()
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(config)
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [binary, f"--config.file={config_file}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@dataclass
class FakeEngine:
    """One engine pod's request counters, advanced by a scripted steady load, exported as its engine table says."""

    table: EngineTable
    requests: float = 0.0
    tokens: float = 0.0
    finished: int = 0

    def advance(self, seconds: float) -> None:
        due = self.requests + REQUESTS_PER_SECOND_PER_POD * seconds
        while self.finished + 1 <= due:
            self.tokens += LENGTHS[self.finished % len(LENGTHS)]
            self.finished += 1
        self.requests = due

    def exposition(self) -> str:
        return exposition(self.table, PodState(finished=self.finished, generated=self.tokens), model=MODEL)


ENGINES: Final = {
    "vllm-0.33.0": (vllm_0_33_0.TABLE, VLLM),
    "vllm-pre-0.11": (vllm_pre_0_11.TABLE, VLLM),
    "sglang-0.5.23": (sglang_0_5_23.TABLE, SGLANG),
}


@pytest.fixture(params=list(ENGINES))
def engine(request: pytest.FixtureRequest) -> tuple[EngineTable, EngineSeries]:
    return ENGINES[request.param]


@pytest.fixture
async def vllm_pods(engine: tuple[EngineTable, EngineSeries]) -> AsyncIterator[list[str]]:
    pods = [FakeEngine(engine[0]) for _ in range(PODS)]
    runners: list[web.AppRunner] = []
    addresses = []
    for pod in pods:
        app = web.Application()

        async def metrics(_request: web.Request, pod: FakeEngine = pod) -> web.Response:
            return web.Response(text=pod.exposition(), content_type="text/plain")

        app.router.add_get("/metrics", metrics)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        addresses.append(f"127.0.0.1:{runner.addresses[0][1]}")

    async def drive() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            for pod in pods:
                pod.advance(now - last)
            last = now

    driver = asyncio.create_task(drive())
    try:
        yield addresses
    finally:
        driver.cancel()
        await asyncio.gather(driver, return_exceptions=True)
        for runner in runners:
            await runner.cleanup()


def static_scrape(job: str, addresses: list[str], labels: Mapping[str, str], *, interval: str = "250ms") -> str:
    """A Prometheus configuration scraping `addresses` as one job, every series labelled with `labels`."""
    config = {
        "global": {"scrape_interval": interval, "scrape_timeout": f"{int(interval.removesuffix('ms')) * 9 // 10}ms",
                   "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": addresses, "labels": dict(labels)}]}],
    }  # fmt: skip
    return json.dumps(config)  # JSON is YAML


@pytest.fixture
def prometheus(tmp_path: Path, vllm_pods: list[str]) -> Iterator[str]:
    with running_prometheus(tmp_path, static_scrape("vllm", vllm_pods, {"namespace": NAMESPACE})) as url:
        yield url


async def wait_ready(url: str, *, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1)) as session:
        while True:
            try:
                async with session.get(f"{url}/-/ready") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"Prometheus at {url} not ready within {within}s")
            await asyncio.sleep(0.1)


async def scraped_signals(
    tmp_path: Path, job: str, addresses: list[str], queries: SignalQueries, *,
    complete: Callable[[ServerSignals], bool], settle: float = 0.0,
) -> ServerSignals:  # fmt: skip
    """The signals of the pods at `addresses`, through a real Prometheus, once it scrapes every one and `complete`
    holds (then `settle` seconds later: a window full of all their scrapes)."""

    async def measured(client: PrometheusClient) -> ServerSignals:
        return await measure_signals(client, queries, namespace=NAMESPACE, model=MODEL, server="s", target="t")

    with running_prometheus(tmp_path, static_scrape(job, addresses, {"namespace": NAMESPACE})) as url:
        await wait_ready(url)
        client = PrometheusClient(PrometheusSettings(url=url, timeout=2.0))
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    every = await client.query_number(f'count(up{{job="{job}"}} == 1)') == len(addresses)
                except QueryFailure:
                    every = False
                found = await measured(client) if every else None
                if found is not None and complete(found):
                    break
                assert time.monotonic() < deadline, f"no complete signals from every pod within 20 s: {found}"
                await asyncio.sleep(0.25)
            await asyncio.sleep(settle)
            return await measured(client)
        finally:
            await client.close()


async def test_measured_load_is_the_injected_load_within_five_percent(
    prometheus: str, engine: tuple[EngineTable, EngineSeries]
) -> None:
    await wait_ready(prometheus)
    client = PrometheusClient(PrometheusSettings(url=prometheus, timeout=2.0))
    queries = LoadQueries(window="2s").for_engine(engine[1])
    try:
        # Poll until a series exists (Prometheus 2.42 hands new targets to its scrapers after a fixed 5 s
        # discovery throttle, which no flag shortens), then until the 2 s window is full of scrapes.
        deadline = time.monotonic() + 20
        first_seen: float | None = None
        load = None
        while first_seen is None or time.monotonic() - first_seen < 2.25:
            assert time.monotonic() < deadline, "Prometheus gave no load within 20 s"
            await asyncio.sleep(0.25)
            try:
                load = await measure_load(client, queries, namespace=NAMESPACE, model=MODEL, server="s", target="t")
            except QueryFailure:
                continue
            if first_seen is None:
                first_seen = time.monotonic()
        assert load is not None
        injected_rate = PODS * REQUESTS_PER_SECOND_PER_POD * 60
        injected_length = sum(LENGTHS) / len(LENGTHS)
        assert load.arrival_rate == pytest.approx(injected_rate, rel=0.05)
        assert load.avg_length == pytest.approx(injected_length, rel=0.05)
        # Another model's load is not there at all: no series, which the controller never acts on.
        with pytest.raises(QueryFailure) as missing:
            await measure_load(client, queries, namespace=NAMESPACE, model="other", server="s", target="t")
        assert missing.value.reason == "no_data"
    finally:
        await client.close()



async def test_sglangs_queues_are_counted_once_under_priority_scheduling(tmp_path: Path) -> None:
    """SGLang with priority scheduling exports each queue gauge as a total (`priority=""`) and per priority: the
    default queries count the total, once per pod."""
    state = PodState(waiting=3.0, running=5.0, kv_cache=0.4)
    text = exposition(sglang_0_5_23.TABLE, state, model=MODEL, shares={"0": 0.25, "1": 0.75})
    app = web.Application()

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="text/plain")

    app.router.add_get("/metrics", metrics)
    runners = []
    for _ in range(PODS):
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
    addresses = [f"127.0.0.1:{runner.addresses[0][1]}" for runner in runners]
    try:
        # No request finished: the latencies are 0/0 and missing; the gauges are what this checks.
        signals = await scraped_signals(
            tmp_path, "sglang", addresses, SignalQueries(window="2s").for_engine(SGLANG),
            complete=lambda found: None not in (found.waiting, found.running, found.kv_cache),
        )  # fmt: skip
    finally:
        for runner in runners:
            await runner.cleanup()
    assert (signals.waiting, signals.running) == (PODS * 3.0, PODS * 5.0)
    assert signals.kv_cache == pytest.approx(0.4)


async def test_a_fleet_mixing_vllm_releases_is_measured_whole_each_pod_once(tmp_path: Path) -> None:
    """Three vLLM pods: one exporting only 0.33.0's names, one only the pre-0.11 names, one both (a 0.10 pod with
    the old names shown, same labels). Equal token rates, ITL 20, 40 and 60 ms, KV-cache usage 0.2, 0.4, 0.6:
    the default queries give the means over the three pods (40 ms, 0.4), the pod with both names counted once."""
    current, old = vllm_0_33_0.TABLE, vllm_pre_0_11.TABLE
    renamed = [one for one in old.series if one.name not in current.names() and one.kind in ("gauge", "histogram")]
    shown = tuple(replace(one, labels={"engine": "0"}) for one in renamed)
    both = EngineTable(engine="vLLM", version="0.10", source="0.33.0's and the renamed old names, same labels",
                       model_label="model_name", series=current.series + shown)  # fmt: skip
    pods = [(current, 0.020, 0.2), (old, 0.040, 0.4), (both, 0.060, 0.6)]
    states = [PodState(kv_cache=kv) for _, _, kv in pods]
    runners = []
    for (table, _, _), state in zip(pods, states, strict=True):
        app = web.Application()

        async def metrics(_request: web.Request, table: EngineTable = table, state: PodState = state) -> web.Response:
            return web.Response(text=exposition(table, state, model=MODEL), content_type="text/plain")

        app.router.add_get("/metrics", metrics)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)

    async def drive() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            for (_, itl, _), state in zip(pods, states, strict=True):
                tokens = 100.0 * (now - last)
                state.generated += tokens
                state.itl_seconds += tokens * itl
            last = now

    driver = asyncio.create_task(drive())
    addresses = [f"127.0.0.1:{runner.addresses[0][1]}" for runner in runners]
    try:
        signals = await scraped_signals(
            tmp_path, "vllm", addresses, SignalQueries(window="2s"),
            complete=lambda found: found.itl_ms is not None and found.kv_cache is not None, settle=2.5,
        )  # fmt: skip
    finally:
        driver.cancel()
        await asyncio.gather(driver, return_exceptions=True)
        for runner in runners:
            await runner.cleanup()
    assert signals.itl_ms == pytest.approx(40.0, rel=0.03)
    assert signals.kv_cache == pytest.approx(0.4)
