"""The default load queries find the engines we render, whatever model name vLLM reports (reconciler/inferno/load.py,
charts/modelbooster/templates/engine-podmonitor.yaml, docs/design/inferno.md §18).

An engine is rendered from examples/backend-autoscaling.yaml, which sets no `served-model-name`: vLLM then labels
its series `model_name="<the --model path>"`, which no Server names. Its pod is created in the fake API server as
Kthena's ModelServing controller makes it (the rendered template's labels and containers, a controller reference
to the ModelServing, Kthena's own labels), running at 127.0.0.1, beside a lookalike pod with our labels and no
controller; a fake vLLM exporter there labels its counters as vLLM does. The real Prometheus (/usr/bin/prometheus)
scrapes them with the chart's PodMonitor, turned into a scrape config as prometheus-operator turns it. The
controller's default queries, for a Server targeting that ModelServing, must give the injected load of the one
engine within 5 %; the model-name selector alone, as before, finds nothing.

Debian's Prometheus is built without Kubernetes service discovery (its config refuses `kubernetes_sd_configs`),
so the targets reach it through a `file_sd_configs` file holding what pod discovery makes of each stored pod: one
target per container port, or one without a port for a container that declares none, labelled with the
`__meta_kubernetes_pod_*` labels Prometheus documents. Everything after — relabeling, scraping, querying — is
Prometheus's own.

Prometheus is not a Python package: in CI (`CI` set) a missing binary fails the test, elsewhere it is skipped
with the reason (tests/reconciler/test_prometheus_load.py).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from aiohttp import web

from reconciler.inferno.load import LoadQueries, measure_load
from reconciler.inferno.prometheus import PrometheusClient, PrometheusSettings, QueryFailure
from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.runtime.client import KubeClient
from reconciler.runtime.kinds import POD
from tests.chart.render import render
from tests.engines.table import PodState, exposition
from tests.engines.vllm_0_33_0 import TABLE as VLLM_TABLE
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS
from tests.reconciler.test_prometheus_load import running_prometheus, wait_ready

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE: Final = ROOT / "examples/backend-autoscaling.yaml"
REQUESTS_PER_SECOND: Final = 50.0
LENGTHS: Final = (300, 700)
TICK: Final = 0.05


def rendered_serving() -> dict[str, Any]:
    """The ModelServing `modelbooster render` makes of the example, moved to NS."""
    done = subprocess.run([sys.executable, "-m", "modelbooster", "render", "-f", str(EXAMPLE), "-o", "json"],
                          cwd=ROOT, capture_output=True, text=True, check=True)  # fmt: skip
    (serving,) = [obj for obj in json.loads(done.stdout)["items"] if obj["kind"] == "ModelServing"]
    serving["metadata"]["namespace"] = NS
    return dict(serving)


def flag(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


class VllmExporter:
    """One engine's `/metrics` as vLLM 0.33.0 exposes them (tests/engines/), labelled with the served model name."""

    def __init__(self, served_model_name: str) -> None:
        self.model_name = served_model_name
        self.requests = 0.0
        self.finished = 0
        self.tokens = 0

    def advance(self, seconds: float) -> None:
        self.requests += REQUESTS_PER_SECOND * seconds
        while self.finished + 1 <= self.requests:
            self.tokens += LENGTHS[self.finished % len(LENGTHS)]
            self.finished += 1

    def exposition(self) -> str:
        return exposition(VLLM_TABLE, PodState(finished=self.finished, generated=self.tokens), model=self.model_name)


def _label_name(key: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in key)


def pod_targets(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """What Prometheus's pod discovery (role: pod) makes of one pod: a target per container port, or one without
    a port for a container that declares none, with the documented `__meta_kubernetes_pod_*` labels."""
    meta, status = pod["metadata"], pod.get("status") or {}
    common = {
        "__meta_kubernetes_namespace": meta["namespace"],
        "__meta_kubernetes_pod_name": meta["name"],
        "__meta_kubernetes_pod_uid": meta["uid"],
        "__meta_kubernetes_pod_ip": status.get("podIP", ""),
        "__meta_kubernetes_pod_phase": status.get("phase", ""),
    }
    for key, value in (meta.get("labels") or {}).items():
        common[f"__meta_kubernetes_pod_label_{_label_name(key)}"] = value
        common[f"__meta_kubernetes_pod_labelpresent_{_label_name(key)}"] = "true"
    controller = next((ref for ref in meta.get("ownerReferences") or () if ref.get("controller")), None)
    if controller is not None:
        common["__meta_kubernetes_pod_controller_kind"] = controller["kind"]
        common["__meta_kubernetes_pod_controller_name"] = controller["name"]
    targets = []
    containers = [(c, "false") for c in pod["spec"].get("containers") or ()]
    containers += [(c, "true") for c in pod["spec"].get("initContainers") or ()]
    for container, init in containers:
        labels = {**common, "__meta_kubernetes_pod_container_name": container["name"],
                  "__meta_kubernetes_pod_container_init": init}  # fmt: skip
        ports = container.get("ports") or []
        if not ports:
            targets.append({"targets": [status.get("podIP", "")], "labels": labels})
        for port in ports:
            number = str(port["containerPort"])
            targets.append({"targets": [f"{status.get('podIP', '')}:{number}"],
                            "labels": {**labels, "__meta_kubernetes_pod_container_port_number": number,
                                       "__meta_kubernetes_pod_container_port_protocol": port.get("protocol", "TCP"),
                                       "__meta_kubernetes_pod_container_port_name": port.get("name", "")}})  # fmt: skip
    return targets


def scrape_configs(monitor: dict[str, Any], *, targets_file: Path) -> list[dict[str, Any]]:
    """A PodMonitor as prometheus-operator turns it into scrape configs, one per endpoint, for the fields ours
    uses: pods matching `selector.matchLabels`, the target labels the operator adds (namespace, container, pod),
    then the endpoint's own relabelings (its namespaceSelector is checked by the caller: every namespace)."""
    return [scrape_config(monitor, endpoint, index, targets_file=targets_file)
            for index, endpoint in enumerate(monitor["spec"]["podMetricsEndpoints"])]  # fmt: skip


def scrape_config(
    monitor: dict[str, Any], endpoint: dict[str, Any], index: int, *, targets_file: Path
) -> dict[str, Any]:
    relabels: list[dict[str, Any]] = []
    for key, value in sorted(monitor["spec"]["selector"]["matchLabels"].items()):
        name = _label_name(key)
        relabels.append({"action": "keep", "source_labels": [f"__meta_kubernetes_pod_label_{name}",
                                                               f"__meta_kubernetes_pod_labelpresent_{name}"],
                         "regex": f"({value});true"})  # fmt: skip
    relabels += [
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
    ]
    names = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    for rule in endpoint["relabelings"]:
        relabels.append({names.get(key, key): value for key, value in rule.items()})
    return {
        "job_name": f"podMonitor/{monitor['metadata']['namespace']}/{monitor['metadata']['name']}/{index}",
        "scrape_interval": endpoint["interval"],
        "scrape_timeout": "200ms",
        "metrics_path": endpoint["path"],
        "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "1s"}],
        "relabel_configs": relabels,
    }


@pytest.fixture
async def engine(fake: FakeApiServer) -> AsyncIterator[tuple[dict[str, Any], VllmExporter, int]]:
    """The rendered ModelServing (stored in the fake), its engine exporter and the exporter's port."""
    serving = rendered_serving()
    assert "ownerReferences" not in serving["metadata"]  # rendered without a uid; the pod's controller is what counts
    stored = fake.create(serving)
    role = serving["spec"]["template"]["roles"][0]
    template = role["entryTemplate"]
    engine_container = next(c for c in template["spec"]["containers"] if c["name"] == "engine")
    model_path = flag(engine_container["command"], "--model")
    assert model_path is not None
    assert model_path.startswith("/")
    assert flag(engine_container["command"], "--served-model-name") is None
    exporter = VllmExporter(served_model_name=model_path)  # vLLM's default served model name: the --model value

    app = web.Application()

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=exporter.exposition(), content_type="text/plain")

    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = int(runner.addresses[0][1])

    name = serving["metadata"]["name"]
    kthena_labels = {
        "modelserving.volcano.sh/name": name,
        "modelserving.volcano.sh/group-name": f"{name}-0",
        "modelserving.volcano.sh/role": role["name"],
        "modelserving.volcano.sh/role-id": f"{role['name']}-0",
    }
    owner = {"apiVersion": MODEL_SERVING.api_version, "kind": "ModelServing", "name": name,
             "uid": stored["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    pod_name = f"{name}-0-{role['name']}-0-0"
    fake.create({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": pod_name, "namespace": NS, "labels": {**template["metadata"]["labels"],
                                                                            **kthena_labels},
                              "ownerReferences": [owner]},
                 "spec": template["spec"]})  # fmt: skip
    # A lookalike: our labels, no controller. It serves the same load; the PodMonitor must not count it.
    fake.create({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "lookalike", "namespace": NS, "labels": template["metadata"]["labels"]},
                 "spec": template["spec"]})  # fmt: skip
    for pod in (pod_name, "lookalike"):
        status = {"phase": "Running", "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}
        await _set_status(fake, pod, status)

    async def drive() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            exporter.advance(now - last)
            last = now

    driver = asyncio.create_task(drive())
    try:
        yield stored, exporter, port
    finally:
        driver.cancel()
        await asyncio.gather(driver, return_exceptions=True)
        await runner.cleanup()


async def _set_status(fake: FakeApiServer, pod: str, status: dict[str, Any]) -> None:
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="kubelet")
    try:
        await client.patch(POD, NS, pod, {"status": status}, subresource="status")
    finally:
        await client.close()


@pytest.fixture
async def discovered(tmp_path: Path, fake: FakeApiServer, engine: tuple[dict[str, Any], VllmExporter, int]) -> Path:
    """The file of targets pod discovery would make of the pods the fake API server holds."""
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="prometheus-discovery")
    try:
        pods = (await client.list(POD, namespace=NS)).items
    finally:
        await client.close()
    targets = tmp_path / "pods.json"
    targets.write_text(json.dumps([target for pod in pods for target in pod_targets(pod)]))
    return targets


@pytest.fixture
def prometheus(tmp_path: Path, discovered: Path, engine: tuple[dict[str, Any], VllmExporter, int]) -> Iterator[str]:
    _, _, port = engine
    (monitor,) = render(
        {"inferno": {"podMonitor": {"enabled": True, "enginePort": port, "interval": "250ms"}}}
    ).of_kind("PodMonitor")
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    targets = discovered
    with running_prometheus(
        tmp_path,
        yaml.safe_dump({
            "global": {"scrape_interval": "250ms", "scrape_timeout": "200ms", "evaluation_interval": "1s"},
            "scrape_configs": scrape_configs(monitor, targets_file=targets),
        }),
    ) as url:
        yield url


async def test_the_default_queries_select_the_engines_we_render_without_a_served_model_name(
    prometheus: str, engine: tuple[dict[str, Any], VllmExporter, int]
) -> None:
    serving, exporter, _ = engine
    target = serving["metadata"]["name"]
    await wait_ready(prometheus)
    client = PrometheusClient(PrometheusSettings(url=prometheus, timeout=2.0))
    queries = LoadQueries(window="2s")
    # The Server names its Inferno Model, not vLLM's model name (a path it cannot know).
    variables = {"namespace": NS, "model": "mistral-7b", "server": "gpu", "target": target}
    try:
        deadline = time.monotonic() + 30
        first_seen: float | None = None
        load = None
        while first_seen is None or time.monotonic() - first_seen < 2.25:
            assert time.monotonic() < deadline, "Prometheus gave no load within 30 s (pod discovered? scraped?)"
            await asyncio.sleep(0.25)
            try:
                load = await measure_load(client, queries, **variables)
            except QueryFailure:
                continue
            if first_seen is None:
                first_seen = time.monotonic()
        assert load is not None
        # One engine counted, not two: the lookalike pod (no controller) is not scraped.
        assert load.arrival_rate == pytest.approx(REQUESTS_PER_SECOND * 60, rel=0.05)
        assert load.avg_length == pytest.approx(sum(LENGTHS) / len(LENGTHS), rel=0.05)
        # What the old default selected on, the model name, finds nothing for this engine...
        by_name = LoadQueries(arrival='sum(rate(vllm:request_success_total{namespace="$namespace",'
                                      'model_name="$model"}[$window])) * 60', window="2s")  # fmt: skip
        with pytest.raises(QueryFailure) as missing:
            await measure_load(client, by_name, **variables)
        assert missing.value.reason == "no_data"
        # ... and the series carry the ModelServing's name beside vLLM's own label.
        series = await client.query_number(
            f'count(vllm:request_success_total{{modelserving="{target}",model_name="{exporter.model_name}",'
            f'modelbooster="mistral-7b",backend="gpu",role="leader"}})'
        )
        assert series == 1
        # Another ModelServing's Server finds nothing.
        with pytest.raises(QueryFailure):
            await measure_load(client, queries, **{**variables, "target": "other-gpu"})
    finally:
        await client.close()
