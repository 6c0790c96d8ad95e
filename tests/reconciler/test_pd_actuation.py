"""Prefill and decode of a disaggregated ModelBooster backend, scaled apart by the Inferno loop in a cluster
(docs/design/inferno.md §19): the fake API server runs the ModelBooster controller AND the Inferno controller
(one reconciler, as the chart runs them); a real Prometheus scrapes fake vLLM pods, labelled as the chart's
PodMonitor labels them (`modelserving`, `role`), whose number per role follows the ModelServing's
`spec.template.roles[].replicas` (the test plays Kthena's ModelServing controller).

Prefill-heavy traffic (long prompts, short answers), then decode-heavy (short prompts, long answers): each
role scales on its own, prefill per decode stays within [0.25, 4] in every state the ModelServing goes
through, the ModelBooster controller never writes the roles back (even when the ModelBooster changes), and no
pod template changes. Without the external-replicas opt-in Inferno refuses, and the reconciler restores a
role's replicas that someone changed.

Prometheus comes from Debian's package (see test_prometheus_load.py): skipped without it, failed in CI.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.load import LoadQueries
from reconciler.inferno.prometheus import PrometheusSettings
from reconciler.inferno.settings import InfernoSettings, field_manager_of
from reconciler.inferno.wiring import register
from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING
from reconciler.runtime.kinds import Kind
from shared.api import inferno as api
from shared.rollout import ANNOTATION_TEMPLATE
from shared.scaling_consent import ANNOTATION_SCALED_BY
from tests.fakeapi.server import FakeApiServer
from tests.inferno_plant import Truth
from tests.reconciler.harness import FAST, NS, Cluster, RunningReconciler, eventually
from tests.reconciler.test_autoscaler_prometheus import MAX_BATCH, PROFILE, Fleet, Pods, decide
from tests.reconciler.test_prometheus_load import running_prometheus, wait_ready
from tests.reconciler.test_role_replicas import pd_booster, roles, scale_role, without_role_replicas

ROOT = Path(__file__).resolve().parents[2]
INFERNO_CRDS = sorted((ROOT / "charts/modelbooster/charts/inferno-crds/crds").glob("inferno.platform.ai_*.yaml"))
SERVER = Kind(api.GROUP, api.VERSION, api.KIND_SERVER, api.PLURAL_SERVERS)
MODEL: Final = "pd"  # the Inferno Model, and the served model name the fake pods report
PERIOD: Final = "1300ms"  # the Optimizer's interval: one measurement, decision and write per period
WINDOW: Final = "1s"
CAPACITY: Final = 10_000.0  # prompt tokens per second one prefill replica takes
MIN_RATIO, MAX_RATIO = 0.25, 4.0
MAX_ROLE: Final = 12
CEILINGS = Ceilings(max_replicas=50, min_replicas=0, max_step=20, max_step_percent=100, min_stabilization=0)


@dataclass(frozen=True)
class Phase:
    rate_rpm: float
    prompt: int  # prompt tokens per request
    output: int  # generated tokens per request


PHASES: Final = {"prefill-heavy": Phase(60.0, 40_000, 64), "decode-heavy": Phase(240.0, 100, 1024)}
TRUTH: Final = Truth(alpha=PROFILE.alpha, beta=PROFILE.beta, batch=MAX_BATCH * 512 // 1024)


def inferno_obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api.API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec}


def inferno_objects() -> list[dict[str, Any]]:
    perf = {"acc": "G2", "accCount": 1, "alpha": PROFILE.alpha, "beta": PROFILE.beta, "maxBatchSize": MAX_BATCH,
            "atTokens": 512}  # fmt: skip
    server = {
        "name": "pd", "class": "Premium", "model": MODEL,
        "currentAlloc": {"accelerator": "G2", "numReplicas": 1, "load": {"arrivalRate": 0, "avgLength": 0}},
        "targetRef": {"kind": "ModelServing", "name": "m-pd"}, "actuation": "Scale", "scaleDownStabilization": "0s",
        "disaggregation": {
            "prefill": {"maxReplicas": MAX_ROLE}, "decode": {"maxReplicas": MAX_ROLE},
            "minRatio": MIN_RATIO, "maxRatio": MAX_RATIO, "prefillTokensPerSecond": CAPACITY,
        },
    }  # fmt: skip
    flags = {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    return [
        inferno_obj("Accelerator", "g2", {"name": "G2", "type": "G2", "cost": 23}),
        inferno_obj("Model", MODEL, {"name": MODEL, "data": [perf]}),
        inferno_obj("ServiceClass", "premium", {"name": "Premium", "priority": 1,
                                                "data": [{"model": MODEL, "slo-itl": 80, "slo-ttw": 2000}]}),
        inferno_obj("Server", "pd", server),
        inferno_obj("Optimizer", "inferno", {"optimize": False, "interval": PERIOD, "data": {"optimizer": flags}}),
    ]  # fmt: skip


def consenting_booster(*, opt_in: bool) -> dict[str, Any]:
    obj = pd_booster(opt_in=opt_in)
    obj["metadata"].setdefault("annotations", {})[ANNOTATION_SCALED_BY] = "pd"
    return obj


@contextmanager
def prometheus(tmp_path: Path, prefill: list[str], decode: list[str]) -> Iterator[str]:
    """A real Prometheus scraping both fleets, with the labels the chart's PodMonitor gives engine series."""

    def group(addresses: list[str], role: str) -> str:
        targets = ", ".join(f'"{address}"' for address in addresses)
        return f"{{targets: [{targets}], labels: {{namespace: {NS}, modelserving: m-pd, role: {role}}}}}"

    with running_prometheus(
        tmp_path,
        "global: {scrape_interval: 100ms, scrape_timeout: 90ms, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: vllm\n"
        f"    static_configs: [{group(prefill, 'prefill')}, {group(decode, 'decode')}]\n",
    ) as url:
        yield url


class ModelServingPlayer:
    """Kthena's ModelServing controller, as far as the pods go: as many pods of each role run as its replicas
    say, serving the current phase's traffic. Records every (prefill, decode) the ModelServing holds."""

    def __init__(self, cluster: Cluster, prefill: Fleet, decode: Fleet) -> None:
        self.cluster, self.prefill, self.decode = cluster, prefill, decode
        self.phase = PHASES["prefill-heavy"]
        self.states: list[tuple[int, int]] = []

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            live = roles(self.cluster)
            p, d = live["prefill"], live["decode"]
            if not self.states or self.states[-1] != (p, d):
                self.states.append((p, d))
            phase = self.phase
            self.prefill.prefill(rate_rpm=phase.rate_rpm, prompt=phase.prompt, replicas=p, capacity=CAPACITY)
            self.decode.serve(truth=TRUTH, rate_rpm=phase.rate_rpm, length=phase.output, replicas=d)
            await asyncio.sleep(0.05)


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


def start_reconciler(fake: FakeApiServer, *, prometheus_url: str | None) -> RunningReconciler:
    for path in INFERNO_CRDS:
        fake.register_crd(yaml.safe_load(path.read_text()))
    reconciler = RunningReconciler(fake, FAST, "r1")
    settings = InfernoSettings(
        ceilings=CEILINGS,
        prometheus=None if prometheus_url is None else PrometheusSettings(url=prometheus_url, timeout=2.0),
        load_queries=LoadQueries(window=WINDOW),
    )
    register(reconciler.process.context, settings)
    return reconciler


def server_status(cluster: Cluster) -> dict[str, Any]:
    return dict((cluster.get(SERVER, "pd") or {}).get("status") or {})


def scaling(cluster: Cluster) -> dict[str, Any]:
    return next((c for c in server_status(cluster).get("conditions") or () if c["type"] == "ScalingActive"), {})


def serving_writes(reconciler: RunningReconciler) -> list[str]:
    """The ModelBooster controller's writes to the ModelServing after creating it (both controllers run in one
    process: Inferno's writes are told by their field manager)."""
    return [
        f"{entry.verb} {entry.content_type}"
        for entry in reconciler.writes()
        if entry.resource == "modelservings" and entry.name == "m-pd" and entry.verb != "create"
        and entry.query.get("fieldManager") != field_manager_of(reconciler.settings.process.field_manager)
    ]  # fmt: skip


async def test_prefill_and_decode_scale_apart_in_a_cluster_and_the_reconciler_keeps_them(
    fake: FakeApiServer, cluster: Cluster, tmp_path: Path, pods: Pods
) -> None:
    prefill, decode = await pods.fleet(model=MODEL), await pods.fleet(model=MODEL)
    addresses = {id(pod): address for pod, address in pods.made}  # pods compare by value: tell them by identity
    with prometheus(tmp_path, [addresses[id(pod)] for pod in prefill.pods],
                    [addresses[id(pod)] for pod in decode.pods]) as url:  # fmt: skip
        await wait_ready(url)
        reconciler = start_reconciler(fake, prometheus_url=url)
        cluster.create_booster(consenting_booster(opt_in=True))
        await reconciler.start()
        stop = asyncio.Event()
        player = ModelServingPlayer(cluster, prefill, decode)
        playing: asyncio.Task[None] | None = None
        try:
            await eventually(lambda: cluster.get(MODEL_SERVING, "m-pd") is not None, message="ModelServing")
            await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
            playing = asyncio.create_task(player.run(stop))
            before = cluster.get(MODEL_SERVING, "m-pd") or {}
            for obj in inferno_objects():
                fake.create(copy.deepcopy(obj))
            settled: dict[str, dict[str, Any]] = {}
            periods: dict[str, int] = {}

            async def settle(phase: str, prefill_replicas: int, decode_replicas: int) -> None:
                """Run the phase until a period confirms both roles at the expected replicas (ScalingActive
                AtDecision, the status naming them): returns that period's status and how many periods it took."""
                runs = reconciler.metric("inferno_optimizations_total", result="success")
                wanted = {"prefill": prefill_replicas, "decode": decode_replicas}

                def confirmed() -> dict[str, Any] | None:
                    status = server_status(cluster)
                    decided = {role["side"]: role["replicas"] for role in status.get("roles") or ()}
                    at_decision = scaling(cluster).get("reason") == "AtDecision"
                    return status if at_decision and decided == wanted and roles(cluster) == wanted else None

                settled[phase] = await eventually(
                    confirmed, within=60, message=f"{phase}: {wanted}; states {player.states}"
                )
                periods[phase] = int(reconciler.metric("inferno_optimizations_total", result="success") - runs)

            # Prefill-heavy: 60 requests/min of 40,000 prompt tokens = 40,000 tokens/s, 4 prefill replicas'
            # worth; 64 tokens out of each need 1 decode replica. Prefill/decode 4 is the band's top.
            await settle("prefill-heavy", 4, 1)
            # The ModelBooster changes: the reconciler reconciles the ModelServing and leaves the roles be.
            await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
            booster = reconciler.manager.controllers[0]
            await eventually(lambda: len(booster.queue) == 0 and not booster.queue.processing())
            assert roles(cluster) == {"prefill": 4, "decode": 1}

            # Decode-heavy: 240 requests/min of 1,024 tokens out need 7 decode replicas at 80 ms ITL (what the
            # optimiser gives, `decide`); 100-token prompts need 1 prefill replica, raised to 2 by the band's
            # bottom (7 x 0.25 = 1.75).
            player.phase = PHASES["decode-heavy"]
            expected_decode = decide(240.0, 1024, PROFILE, 1)
            await settle("decode-heavy", 2, expected_decode)
            print(f"PD actuation: periods to settle {periods}; states {player.states}")
        finally:
            stop.set()
            if playing is not None:
                await playing
            await reconciler.stop()

    # The ratio held in every state the ModelServing went through.
    assert all(MIN_RATIO <= p / d <= MAX_RATIO for p, d in player.states), player.states
    # Each side moved on its own, and the status says what was decided per role, and the ratio.
    heavy_prefill = {role["name"]: role for role in settled["prefill-heavy"]["roles"]}
    heavy_decode = {role["name"]: role for role in settled["decode-heavy"]["roles"]}
    assert (heavy_prefill["prefill"]["need"], heavy_prefill["decode"]["need"]) == (4, 1), settled
    assert (heavy_decode["prefill"]["need"], heavy_decode["decode"]["need"]) == (1, expected_decode), settled
    assert heavy_prefill["prefill"]["promptTokensPerSecond"] > heavy_decode["prefill"]["promptTokensPerSecond"]
    assert (settled["prefill-heavy"]["ratio"], settled["decode-heavy"]["ratio"]) == (4.0, round(2 / expected_decode, 3))
    events = [e["message"] for e in cluster.events("Scaled")]
    assert any(re.search(r"prefill \d+ -> 4 \(needs 4\)", m) for m in events), events
    assert any(re.search(rf"decode \d+ -> {expected_decode} \(needs", m) for m in events), events
    # The ModelBooster controller never wrote the ModelServing after creating it, though the ModelBooster
    # changed; the pods' spec is what it was (no rollout), and so is the recorded template digest.
    after = cluster.get(MODEL_SERVING, "m-pd") or {}
    assert serving_writes(reconciler) == [], serving_writes(reconciler)
    assert without_role_replicas(after) == without_role_replicas(before)
    template = before["metadata"]["annotations"][ANNOTATION_TEMPLATE]
    assert after["metadata"]["annotations"][ANNOTATION_TEMPLATE] == template


async def test_without_the_opt_in_inferno_refuses_and_the_reconciler_restores(
    fake: FakeApiServer, cluster: Cluster
) -> None:
    reconciler = start_reconciler(fake, prometheus_url=None)
    cluster.create_booster(consenting_booster(opt_in=False))
    await reconciler.start()
    try:
        await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
        for obj in inferno_objects():
            fake.create(copy.deepcopy(obj))
        await eventually(lambda: scaling(cluster).get("reason") == "ExternalScalingNotEnabled", within=10)
        assert "external-replicas" in scaling(cluster)["message"]
        assert roles(cluster) == {"prefill": 1, "decode": 1}
        assert cluster.events("Scaled") == []
        # Had anyone scaled a role anyway, the ModelBooster controller puts the rendered replicas back.
        await scale_role(cluster, "decode", 3)
        await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
        await eventually(lambda: roles(cluster) == {"prefill": 1, "decode": 1}, message="role replicas restored")
    finally:
        await reconciler.stop()


async def test_a_model_serving_of_its_own_is_scaled_by_its_roles_bounds_alone(
    fake: FakeApiServer, cluster: Cluster
) -> None:
    """A disaggregated ModelServing no ModelBooster controls, naming the Server itself: the roles' bounds are
    the Server's disaggregation (no spec.maxReplicas needed); with no Prometheus the load is the one typed in
    the Server, the prefill rate unknown (prefill keeps its replicas but for the band)."""
    reconciler = start_reconciler(fake, prometheus_url=None)
    cluster.create_booster(consenting_booster(opt_in=True))
    await reconciler.start()
    try:
        await eventually(lambda: cluster.get(MODEL_SERVING, "m-pd") is not None, message="ModelServing")
        rendered = cluster.get(MODEL_SERVING, "m-pd") or {}
        solo = {"apiVersion": rendered["apiVersion"], "kind": rendered["kind"], "spec": rendered["spec"],
                "metadata": {"name": "solo", "namespace": NS, "annotations": {ANNOTATION_SCALED_BY: "pd"}}}  # fmt: skip
        fake.create(solo)
        for obj in inferno_objects():
            if obj["kind"] == "Server":
                obj["spec"]["targetRef"]["name"] = "solo"
                obj["spec"]["currentAlloc"]["load"] = {"arrivalRate": 240, "avgLength": 1024}
            fake.create(copy.deepcopy(obj))
        expected_decode = decide(240.0, 1024, PROFILE, 1)

        def solo_roles() -> dict[str, int]:
            live = cluster.get(MODEL_SERVING, "solo") or {}
            return {role["name"]: role["replicas"] for role in live["spec"]["template"]["roles"]}

        await eventually(lambda: solo_roles() == {"prefill": 2, "decode": expected_decode}, within=15,
                         message=f"solo: {scaling(cluster)}")  # fmt: skip
        await eventually(lambda: "prefill: prompt-token rate unavailable" in scaling(cluster).get("message", ""),
                         message=f"the condition says why prefill kept its need: {scaling(cluster)}")  # fmt: skip
        assert roles(cluster) == {"prefill": 1, "decode": 1}  # the ModelBooster's backend is not its target
    finally:
        await reconciler.stop()
