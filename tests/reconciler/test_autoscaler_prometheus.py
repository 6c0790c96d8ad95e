"""The control law against a real Prometheus scraping fake vLLM pods (docs/design/inferno.md §14-§17).

The pods serve what the queueing model says replicas with a TRUE performance would report
(tests/inferno_plant.py), as the series of their engine's table (tests/engines/; vLLM 0.33.0's here):
counters for finished requests, generated and prompt tokens and the ITL/TTFT histograms' sums and counts,
gauges for requests running and waiting and KV-cache usage; a pod beyond the
current replica count answers 503, so Prometheus marks its series stale, as it does for a pod that is gone.
Each period measures through the controller's own code (templated queries, the bounded client:
reconciler.inferno.load, .signals), then decides as the controller does: the optimiser on the measured load
(with the typed profile or the online estimate), the guardrail and the stabiliser (guardrail.control), and
for a disaggregated backend the prefill/decode split. Time inside the law is the period count x 60 s (the
stabiliser's window counts periods, not the test machine's speed); Prometheus sees real time, 100 ms scrapes,
a 1 s window, periods of 1.3 s, so each measurement sees the replicas the last period set.

Prometheus comes from Debian's package (see test_prometheus_load.py): skipped without it, failed in CI.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pytest
from aiohttp import web

from optimizer.estimation import Profile, ProfileEstimator
from optimizer.optimize import optimize
from optimizer.system import (
    Accelerator,
    Allocation,
    Load,
    ModelTarget,
    OptimizerFlags,
    PerfData,
    Server,
    ServiceClass,
    System,
)
from reconciler.inferno.disaggregation import Ratio, RoleBounds, prefill_need, split
from reconciler.inferno.guardrail import control
from reconciler.inferno.load import LoadQueries, measure_load
from reconciler.inferno.prometheus import PrometheusClient, PrometheusSettings, QueryFailure
from reconciler.inferno.saturation import Thresholds, assess
from reconciler.inferno.signals import ServerSignals, SignalQueries, measure_signals
from reconciler.inferno.stabilizer import Stabilizer
from tests.engines.table import EngineTable, PodState, exposition
from tests.engines.vllm_0_33_0 import TABLE as VLLM_TABLE
from tests.inferno_plant import Truth, serve
from tests.reconciler.test_prometheus_load import running_prometheus, wait_ready

NAMESPACE: Final = "serving"
PERIOD: Final = 1.3  # seconds of real time between decisions
SIMULATED_PERIOD: Final = 60.0  # what the law is told a period is
WINDOW: Final = "1s"
TICK: Final = 0.05
PROFILE: Final = Profile(alpha=17.15, beta=0.34)  # docs/design/inferno.md §12, on G2
MAX_BATCH, AT_TOKENS = 38, 512
MAX_PODS: Final = 12


# --- fake engine pods -----------------------------------------------------------------------------------------


@dataclass
class Pod:
    """One engine pod: its series are its engine table's (tests/engines/), vLLM 0.33.0's unless told."""

    model: str
    role: str = ""
    table: EngineTable = VLLM_TABLE
    up: bool = False
    rate_rpm: float = 0.0  # this pod's share
    length: int = 1
    prompt: int = 0
    itl_ms: float = 0.0
    ttft_ms: float = 0.0
    state: PodState = field(default_factory=PodState)

    def advance(self, seconds: float) -> None:
        if not self.up:
            return
        requests = self.rate_rpm / 60 * seconds
        tokens = requests * self.length
        s = self.state
        s.finished += requests
        s.generated += tokens
        s.prompt += requests * self.prompt
        s.itl_seconds += tokens * self.itl_ms / 1000
        s.ttft_seconds += requests * self.ttft_ms / 1000
        s.e2e_seconds += requests * (self.ttft_ms + self.length * self.itl_ms) / 1000

    def set_gauges(self, *, running: float, waiting: float, kv: float) -> None:
        self.state.running, self.state.waiting, self.state.kv_cache = running, waiting, kv

    def exposition(self) -> str:
        return exposition(self.table, self.state, model=self.model, extra={"role": self.role} if self.role else None)


@dataclass
class Fleet:
    """The pods of one model (and role): the first `replicas` run, sharing the load evenly."""

    pods: list[Pod]

    def serve(self, *, truth: Truth, rate_rpm: float, length: int, replicas: int, prompt: int = 0) -> None:
        seen = serve(truth=truth, rate_rpm=rate_rpm, length=length, replicas=replicas)
        for index, pod in enumerate(self.pods):
            pod.up = index < replicas
            pod.rate_rpm = rate_rpm / replicas if replicas else 0.0
            pod.length, pod.prompt = length, prompt
            pod.itl_ms, pod.ttft_ms = seen.itl, seen.ttft
            share = 1 / replicas if replicas else 0.0
            pod.set_gauges(running=seen.running * share, waiting=seen.waiting * share, kv=seen.kv_cache)

    def prefill(self, *, rate_rpm: float, prompt: int, replicas: int, capacity: float) -> None:
        """Prefill pods: utilisation is the prompt-token rate over what the replicas take; past 1, prompts
        queue (10 per pod per unit of overload) and the KV cache holds what is being transferred."""
        utilisation = rate_rpm / 60 * prompt / (replicas * capacity) if replicas else 0.0
        for index, pod in enumerate(self.pods):
            pod.up = index < replicas
            pod.rate_rpm = rate_rpm / replicas if replicas else 0.0
            pod.length, pod.prompt = 1, prompt
            pod.itl_ms, pod.ttft_ms = 0.0, 1000 * prompt / capacity
            pod.set_gauges(
                running=min(utilisation, 1.0) * 4, waiting=max(utilisation - 1.0, 0.0) * 10,
                kv=min(utilisation, 1.0) * 0.5,
            )  # fmt: skip


class Pods:
    """Fake engine pods on loopback, each with its /metrics, advanced together every TICK."""

    def __init__(self) -> None:
        self.made: list[tuple[Pod, str]] = []
        self._runners: list[web.AppRunner] = []

    @property
    def addresses(self) -> list[str]:
        return [address for _, address in self.made]

    async def fleet(self, *, model: str, role: str = "", table: EngineTable = VLLM_TABLE) -> Fleet:
        new = [Pod(model=model, role=role, table=table) for _ in range(MAX_PODS)]
        for pod in new:
            await self._add(pod)
        return Fleet(new)

    async def _add(self, pod: Pod) -> None:
        app = web.Application()

        async def metrics(_request: web.Request) -> web.Response:
            if not pod.up:
                return web.Response(status=503, text="not running")
            return web.Response(text=pod.exposition(), content_type="text/plain")

        app.router.add_get("/metrics", metrics)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runners.append(runner)
        self.made.append((pod, f"127.0.0.1:{runner.addresses[0][1]}"))

    async def drive(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            for pod, _ in self.made:
                pod.advance(now - last)
            last = now

    async def close(self) -> None:
        for runner in self._runners:
            await runner.cleanup()


@pytest.fixture
async def pods() -> AsyncIterator[Pods]:
    made = Pods()
    driver = asyncio.create_task(made.drive())
    try:
        yield made
    finally:
        driver.cancel()
        await asyncio.gather(driver, return_exceptions=True)
        await made.close()


@contextmanager
def prometheus(tmp_path: Path, addresses: list[str]) -> Iterator[str]:
    targets = ", ".join(f'"{address}"' for address in addresses)
    with running_prometheus(
        tmp_path,
        "global: {scrape_interval: 100ms, scrape_timeout: 90ms, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: vllm\n"
        f"    static_configs: [{{targets: [{targets}], labels: {{namespace: {NAMESPACE}}}}}]\n",
    ) as url:
        yield url


# --- the law, as the controller applies it -------------------------------------------------------------------


def decide(rate: float, length: int, perf: Profile, current: int, *, slo_itl: float = 80.0) -> int:
    """The optimiser's replicas for one Server on G2 (unlimited, kept on its accelerator)."""
    system = System(flags=OptimizerFlags(unlimited=True))
    system.accelerators["G2"] = Accelerator(name="G2", type="G2", cost=23.0)
    system.models["m"] = {"G2": PerfData("m", "G2", 1, perf.alpha, perf.beta, MAX_BATCH, AT_TOKENS)}
    system.service_classes["C"] = ServiceClass("C", 1, (ModelTarget("m", slo_itl=slo_itl, slo_ttw=2000.0),))
    load = Load(arrival_rate=rate, avg_length=length)
    current_alloc = Allocation("G2", current, cost=23.0 * current, load=load)
    system.servers["s"] = Server("s", "C", "m", current=current_alloc, keep_accelerator=True)
    return optimize(system).desired()["s"].num_replicas


async def measured(
    client: PrometheusClient, *, model: str, role: str = "", prompt: bool = False, within: float = 20.0
) -> tuple[float, int, ServerSignals]:
    """Load and signals of one fleet, polling until every signal is there (a new fleet's first scrapes)."""
    load_queries = LoadQueries(window=WINDOW)
    signal_queries = SignalQueries(window=WINDOW)
    if role:
        selector = '{namespace="$namespace",model_name="$model"}'
        narrowed = selector.replace("}", f',role="{role}"}}')
        load_queries = LoadQueries(
            arrival=load_queries.arrival.replace(selector, narrowed),
            length=load_queries.length.replace(selector, narrowed),
            window=WINDOW,
        )
        signal_queries = signal_queries.for_role()
    deadline = time.monotonic() + within
    while True:
        try:
            load = await measure_load(client, load_queries, namespace=NAMESPACE, model=model, server="s", target="t")
            signals = await measure_signals(
                client, signal_queries, namespace=NAMESPACE, model=model, server="s", target="t", role=role,
                prompt_tokens=prompt,
            )  # fmt: skip
        except QueryFailure:
            signals = None
        if signals is not None and not signals.missing and load.avg_length:
            return load.arrival_rate, load.avg_length, signals
        assert time.monotonic() < deadline, f"no complete measurement of {model}/{role} within {within}s"
        await asyncio.sleep(0.2)


@asynccontextmanager
async def scraping(tmp_path: Path, pods: Pods) -> AsyncIterator[PrometheusClient]:
    """A real Prometheus scraping `pods`, and the controller's client on it."""
    with prometheus(tmp_path, pods.addresses) as url:
        await wait_ready(url)
        client = PrometheusClient(PrometheusSettings(url=url, timeout=2.0))
        try:
            yield client
        finally:
            await client.close()


# --- the three scenarios ---------------------------------------------------------------------------------------


CONVERGENCE_PERIODS: Final = 10


async def test_a_profile_off_by_two_is_guarded_at_once_then_learnt_and_the_guard_goes_quiet(
    tmp_path: Path, pods: Pods
) -> None:
    """True alpha, beta are twice the typed profile. Observe: the optimiser sizes with the profile, the guardrail
    adds replicas within two periods, the estimate reaches the truth (alpha within 10 %, beta within 25 %)
    within CONVERGENCE_PERIODS periods of a load that moves (200 and 400 requests/min in turns of three
    periods). Apply: sized with the estimate, the guardrail stops firing."""
    truth = Truth(alpha=2 * PROFILE.alpha, beta=2 * PROFILE.beta, batch=MAX_BATCH * AT_TOKENS // 512)
    plant = await pods.fleet(model="slow")
    async with scraping(tmp_path, pods) as prom:
        estimator = ProfileEstimator(prior=PROFILE)
        stabilizer = Stabilizer(window=5 * SIMULATED_PERIOD)
        replicas = decide(200, 512, PROFILE, 0)
        plant.serve(truth=truth, rate_rpm=200, length=512, replicas=replicas)
        overrides: list[str | None] = []
        replicas_seen: list[int] = [replicas]
        converged_at: int | None = None
        apply_from = None
        for period in range(1, 31):
            rate = 200.0 if ((period - 1) // 3) % 2 == 0 else 400.0
            if apply_from is not None and period >= apply_from:
                rate = 300.0  # a steady load once the estimate is in use
            await asyncio.sleep(PERIOD)
            measured_rate, length, signals = await measured(prom, model="slow")
            assert signals.running is not None
            assert signals.itl_ms is not None
            estimator.observe(itl=signals.itl_ms, batch=signals.running / replicas)
            estimate = estimator.estimate
            close = abs(estimate.alpha / truth.alpha - 1) <= 0.10 and abs(estimate.beta / truth.beta - 1) <= 0.25
            if close and converged_at is None:
                converged_at = period
                apply_from = period + 1
            in_use = estimate if apply_from is not None and period >= apply_from else PROFILE
            decided = decide(measured_rate, length, in_use, replicas)
            assessment = assess(signals.saturation, Thresholds(), replicas=replicas)
            replicas, guarded = control(
                decided=decided, current=replicas, minimum=1, maximum=MAX_PODS, assessment=assessment,
                stabilizer=stabilizer, now=period * SIMULATED_PERIOD,
            )  # fmt: skip
            overrides.append(guarded.override)
            replicas_seen.append(replicas)
            plant.serve(truth=truth, rate_rpm=rate, length=512, replicas=replicas)
            if apply_from is not None and period >= apply_from + 10:
                break
    # The guardrail added replicas within two periods of the first measurement.
    assert "Saturated" in overrides[:2], overrides
    assert max(replicas_seen[:3]) > replicas_seen[0]
    # The estimate reached the truth within N periods.
    assert converged_at is not None, f"not converged: {estimator.estimate}"
    assert converged_at <= CONVERGENCE_PERIODS, converged_at
    # Sized with it, the guard is quiet: no override in the last eight periods.
    assert apply_from is not None
    assert overrides[-8:] == [None] * 8, overrides


async def test_a_noisy_steady_load_does_not_flap(tmp_path: Path, pods: Pods) -> None:
    """The right profile, a load of 260 requests/min +- 25 % each period (where the decision
    flickers between 2 and 3 replicas): at most one change of replicas per
    ten periods (the stabiliser's window and the guardrail's headroom together)."""
    truth = Truth(alpha=PROFILE.alpha, beta=PROFILE.beta, batch=MAX_BATCH * AT_TOKENS // 512)
    plant = await pods.fleet(model="steady")
    rng = random.Random(33)
    async with scraping(tmp_path, pods) as prom:
        stabilizer = Stabilizer(window=10 * SIMULATED_PERIOD)
        replicas = decide(260, 512, PROFILE, 0)
        plant.serve(truth=truth, rate_rpm=260, length=512, replicas=replicas)
        history, decisions = [replicas], []
        for period in range(1, 21):
            await asyncio.sleep(PERIOD)
            measured_rate, length, signals = await measured(prom, model="steady")
            decided = decide(measured_rate, length, PROFILE, replicas)
            decisions.append(decided)
            assessment = assess(signals.saturation, Thresholds(), replicas=replicas)
            replicas, _ = control(
                decided=decided, current=replicas, minimum=1, maximum=MAX_PODS, assessment=assessment,
                stabilizer=stabilizer, now=period * SIMULATED_PERIOD,
            )  # fmt: skip
            history.append(replicas)
            plant.serve(truth=truth, rate_rpm=260 * (1 + rng.uniform(-0.25, 0.25)), length=512, replicas=replicas)
    flickers = sum(1 for a, b in itertools.pairwise(decisions) if a != b)
    assert flickers >= 4, f"the load was not noisy enough to test anything: decisions {decisions}"
    changes = sum(1 for a, b in itertools.pairwise(history) if a != b)
    assert changes <= 2, f"{changes} changes in 20 periods: {history}"


async def test_prefill_and_decode_scale_apart_with_the_ratio_kept(tmp_path: Path, pods: Pods) -> None:
    """A disaggregated backend: prefill-heavy traffic (long prompts, short answers) raises prefill only; then
    decode-heavy traffic (short prompts, long answers) raises decode and lets prefill go down; prefill per
    decode replica stays within [0.25, 4] in every period."""
    truth = Truth(alpha=PROFILE.alpha, beta=PROFILE.beta, batch=MAX_BATCH * AT_TOKENS // 1024)
    prefill = await pods.fleet(model="pd", role="prefill")
    decode = await pods.fleet(model="pd", role="decode")
    ratio, bounds = Ratio(0.25, 4.0), RoleBounds(1, MAX_PODS)
    capacity = 10_000.0  # prompt tokens per second per prefill replica
    phases = {"prefill-heavy": (60.0, 40_000, 64), "decode-heavy": (240.0, 100, 1024)}  # rpm, prompt, output
    async with scraping(tmp_path, pods) as prom:
        stabilizers = {"prefill": Stabilizer(window=0.0), "decode": Stabilizer(window=0.0)}
        p, d = 1, 1
        seen: dict[str, list[tuple[int, int]]] = {}
        period = 0
        for phase, (rate, prompt, output) in phases.items():
            for _ in range(5):
                period += 1
                prefill.prefill(rate_rpm=rate, prompt=prompt, replicas=p, capacity=capacity)
                decode.serve(truth=truth, rate_rpm=rate, length=output, replicas=d)
                await asyncio.sleep(PERIOD)
                _, _, prefill_signals = await measured(prom, model="pd", role="prefill", prompt=True)
                decode_rate, length, decode_signals = await measured(prom, model="pd", role="decode")
                assert prefill_signals.prompt_tokens_per_second is not None
                needs = {
                    "prefill": prefill_need(
                        prompt_tokens_per_second=prefill_signals.prompt_tokens_per_second,
                        tokens_per_second_per_replica=capacity,
                    ),
                    "decode": decide(decode_rate, length, PROFILE, d),
                }
                guarded = {}
                for role, current, signals in (("prefill", p, prefill_signals), ("decode", d, decode_signals)):
                    guarded[role], _ = control(
                        decided=needs[role], current=current, minimum=1, maximum=MAX_PODS,
                        assessment=assess(signals.saturation, Thresholds(), replicas=current),
                        stabilizer=stabilizers[role], now=period * SIMULATED_PERIOD,
                    )  # fmt: skip
                result = split(
                    prefill=guarded["prefill"], decode=guarded["decode"], prefill_bounds=bounds,
                    decode_bounds=bounds, ratio=ratio,
                )  # fmt: skip
                p, d = result.prefill, result.decode
                assert ratio.minimum <= p / d <= ratio.maximum, (phase, p, d)
                seen.setdefault(phase, []).append((p, d))
    heavy_prefill, heavy_decode = seen["prefill-heavy"][-1], seen["decode-heavy"][-1]
    # Prefill-heavy: 40,000 prompt tokens/s need 4 prefill replicas; decode stays small.
    assert heavy_prefill[0] >= 4, seen
    assert heavy_prefill[1] <= 2, seen
    # Decode-heavy: decode grows on its own, prefill falls back to what the ratio keeps.
    assert heavy_decode[1] >= 2 * heavy_prefill[1], seen
    assert heavy_decode[0] < heavy_prefill[0], seen
    assert heavy_decode[1] == decide(240.0, 1024, PROFILE, heavy_decode[1]), seen
