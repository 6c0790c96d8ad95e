"""The chart's lifecycle on a real node, one scenario at a time, under a steady write load.

Each scenario: the release is healthy; a fresh namespace; the load starts; after a lead-in the scenario acts
(a `helm upgrade`, a deleted pod, a stopped kubelet, ...); once the release is healthy again and a tail of
load has passed, the load stops, every created object is given time to become Initialized, and the
namespace is deleted. What the load saw is the scenario's result (`Result`).

Scenarios run in the order of `SCENARIOS`; each leaves the release healthy with its starting values (one
webhook Deployment of two pods, one reconciler), except where its `cleanup` says otherwise.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from tests.node.api import Api, ApiError, wait_for
from tests.node.load import Load, LoadReport
from tests.node.release import LEASE, NAMESPACE, Release, meta
from tests.node.rig import Rig, freeze, thaw

LEAD_IN: Final = 5.0
TAIL: Final = 5.0
HEALTHY_WITHIN: Final = 240.0
NAMESPACE_GONE_WITHIN: Final = 180.0
METRICS_PORT: Final = 8080


@dataclass
class Stage:
    """What a scenario acts on."""

    rig: Rig
    release: Release
    api: Api
    load: Load | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    act: Callable[[Stage], None]
    prepare: Callable[[Stage], None] | None = None
    cleanup: Callable[[Stage], None] | None = None
    # Webhook pods expected once the scenario is over (a frozen one counts as it recovers).
    webhooks: int = 2
    # What the design cannot avoid (docs/design/webhook.md §10): calls timed out at a frozen process; the
    # window between `helm uninstall` and the reinstall's arming, with no webhook; on a single node, a new
    # connection the API server opens while the node is NotReady (every webhook endpoint withdrawn).
    freezes_a_webhook: bool = False
    uninstalls: bool = False
    node_not_ready: bool = False


@dataclass
class Result:
    key: str
    title: str
    report: LoadReport
    seconds: float
    notes: list[str]
    balance: dict[str, int] = field(default_factory=dict)  # webhook pod -> admission requests it served

    @property
    def failed(self) -> int:
        return self.report.count("failed")

    @property
    def unchecked(self) -> int:
        return self.report.count("unchecked")

    def row(self) -> dict[str, Any]:
        report = self.report
        return {
            "scenario": self.key,
            "title": self.title,
            "writes": report.admissions(),
            "failed": self.failed,
            "failed_window_s": round(report.window("failed"), 2),
            "unchecked": self.unchecked,
            "unchecked_window_s": round(report.window("unchecked"), 2),
            "skipped": report.count("skipped"),
            "creates": len(report.initialized) + len(report.not_initialized),
            "not_initialized": len(report.not_initialized),
            "initialized_p50_s": round(report.percentile_initialized(0.5), 3),
            "initialized_p99_s": round(report.percentile_initialized(0.99), 3),
            "initialized_max_s": round(report.longest_initialized(), 3),
            "initialized_max_admitted_s": round(report.longest_initialized(checked_only=True), 3),
            "slowest_writes": [
                {
                    "at_s": round(write.at, 2),
                    "seconds": round(write.seconds, 2),
                    "kind": write.kind,
                    "outcome": write.outcome,
                }
                for write in report.slowest()
            ],
            "seconds": round(self.seconds, 1),
            "failures": report.messages("failed"),
            "marks": [(round(at, 1), what) for at, what in report.marks],
            "notes": self.notes,
            "balance": self.balance,
        }


def run(scenario: Scenario, stage: Stage) -> Result:
    started = time.monotonic()
    stage.notes = []
    stage.release.wait_healthy(timeout=HEALTHY_WITHIN)
    if scenario.prepare is not None:
        scenario.prepare(stage)
        stage.release.wait_healthy(timeout=HEALTHY_WITHIN)
    namespace = f"lc-{scenario.key}-{int(time.time()) % 100000}"
    stage.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    before = webhook_requests(stage)
    load = Load(stage.api.credentials, namespace=namespace)
    stage.load = load
    try:
        load.start()
        time.sleep(LEAD_IN)
        load.mark("act")
        scenario.act(stage)
        load.mark("acted")
        stage.release.wait_healthy(webhooks=scenario.webhooks, timeout=HEALTHY_WITHIN)
        load.mark("healthy")
        time.sleep(TAIL)
    finally:
        report = load.stop()
        stage.load = None
    after = webhook_requests(stage)
    balance = {pod: after[pod] - before.get(pod, 0) for pod in after}
    if scenario.cleanup is not None:
        scenario.cleanup(stage)
    delete_namespace(stage.api, namespace)
    return Result(key=scenario.key, title=scenario.title, report=report, seconds=time.monotonic() - started,
                  notes=list(stage.notes), balance=balance)  # fmt: skip


def delete_namespace(api: Api, namespace: str) -> None:
    api.delete(f"/api/v1/namespaces/{namespace}")
    wait_for(f"namespace {namespace} deleted", lambda: api.get_or_none(f"/api/v1/namespaces/{namespace}") is None,
             timeout=NAMESPACE_GONE_WITHIN, interval=1.0)  # fmt: skip


# ---------------------------------------------------------------------- observations
_REQUESTS = re.compile(r"^controller_runtime_webhook_requests_total\{[^}]*\} ([0-9.e+]+)$", re.MULTILINE)


def webhook_requests(stage: Stage) -> dict[str, int]:
    """Admission requests each running webhook pod has served (its /metrics, over the pod network)."""
    counts = {}
    for pod in stage.release.pods("webhook"):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip or meta(pod).get("deletionTimestamp"):
            continue
        try:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(f"http://{ip}:{METRICS_PORT}/metrics", timeout=3) as answer:
                text = answer.read().decode()
        except (urllib.error.URLError, OSError):
            continue
        counts[meta(pod)["name"]] = int(sum(float(value) for value in _REQUESTS.findall(text)))
    return counts


# ---------------------------------------------------------------------- acts
def steady(seconds: float) -> Callable[[Stage], None]:
    def act(_: Stage) -> None:
        time.sleep(seconds)

    return act


_rollouts = iter(range(1, 1000))


def helm_upgrade_rolling(stage: Stage) -> None:
    """A `helm upgrade` whose only change is a pod annotation of both Deployments: both roll."""
    mark = {"podAnnotations": {"modelbooster.io/node-tier-rollout": str(next(_rollouts))}}
    stage.release.upgrade({"webhook": mark, "reconciler": mark})


def delete_pod(stage: Stage, name: str) -> None:
    stage.api.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")


def webhook_pod_names(stage: Stage) -> list[str]:
    return [meta(pod)["name"] for pod in stage.release.pods("webhook") if not meta(pod).get("deletionTimestamp")]


def one_webhook_deleted(stage: Stage) -> None:
    delete_pod(stage, webhook_pod_names(stage)[0])
    time.sleep(2)  # the replacement exists before "healthy" is judged


def both_webhooks_deleted(stage: Stage) -> None:
    for name in webhook_pod_names(stage):
        delete_pod(stage, name)
    time.sleep(2)


def both_webhooks_evicted(stage: Stage) -> None:
    """`kubectl drain` style: an Eviction per pod, each retried while the disruption budget says no."""
    pending = webhook_pod_names(stage)
    refused = 0
    deadline = time.monotonic() + HEALTHY_WITHIN
    while pending and time.monotonic() < deadline:
        for name in list(pending):
            eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                        "metadata": {"name": name, "namespace": NAMESPACE}}  # fmt: skip
            try:
                stage.api.post(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/eviction", eviction)
                pending.remove(name)
            except ApiError as error:
                if error.status != 429:
                    raise
                refused += 1
        if pending:
            time.sleep(1.0)
    if pending:
        raise TimeoutError(f"evictions of {pending} still refused after {HEALTHY_WITHIN:.0f} s")
    stage.notes.append(f"evictions refused by the disruption budget: {refused}")
    time.sleep(2)


def leader_deleted(stage: Stage) -> None:
    leader = stage.release.leader_pod()
    holder = stage.release.lease_holder()
    delete_pod(stage, leader)
    wait_for("a new leader", lambda: stage.release.lease_holder() not in ("", holder), timeout=HEALTHY_WITHIN)


def two_reconcilers(stage: Stage) -> None:
    stage.release.upgrade({"reconciler": {"replicas": 2}})


def one_reconciler(stage: Stage) -> None:
    stage.release.upgrade({"reconciler": {"replicas": 1}})
    stage.release.wait_healthy(timeout=HEALTHY_WITHIN)


def kubelet_stopped(seconds: float) -> Callable[[Stage], None]:
    def act(stage: Stage) -> None:
        stage.rig.stop_kubelet()
        try:
            time.sleep(seconds)
        finally:
            stage.rig.start_kubelet()
        node = stage.rig.node_name
        wait_for("node Ready", lambda: node_ready(stage.api, node), timeout=HEALTHY_WITHIN)

    return act


def node_ready(api: Api, node: str) -> bool:
    conditions = (api.get(f"/api/v1/nodes/{node}").get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def reinstall(*, delete_lease: bool) -> Callable[[Stage], None]:
    def act(stage: Stage) -> None:
        stage.release.uninstall()
        if delete_lease:
            lease = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}"
            try:
                stage.api.delete(lease)
                stage.notes.append("left-over Lease deleted")
            except ApiError as error:
                if error.status != 404:
                    raise
                stage.notes.append("no Lease was left over")
        elif stage.api.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}"):
            stage.notes.append("a Lease was left over")
        stage.release.install()

    return act


def webhook_frozen(seconds: float) -> Callable[[Stage], None]:
    """SIGSTOP to the webhook process that served the most admissions lately, SIGCONT `seconds` later."""

    def act(stage: Stage) -> None:
        first = webhook_requests(stage)
        time.sleep(2)
        second = webhook_requests(stage)
        busiest = max(second, key=lambda pod: second[pod] - first.get(pod, 0))
        pid = stage.rig.container_pid(pod=busiest, namespace=NAMESPACE, container="webhook")
        stage.notes.append(f"froze {busiest} (served {second[busiest] - first.get(busiest, 0)} of "
                           f"{sum(second.values()) - sum(first.values())} admissions in the 2 s before)")  # fmt: skip
        freeze(pid)
        try:
            time.sleep(seconds)
        finally:
            thaw(pid)

    return act


SCENARIOS: Final = (
    Scenario("steady", "steady, 60 s", steady(60.0)),
    Scenario("upgrade", "`helm upgrade` rolling both Deployments", helm_upgrade_rolling),
    Scenario("webhook-deleted", "one webhook pod deleted", one_webhook_deleted),
    Scenario("webhooks-evicted", "both webhook pods evicted drain-style (the PDB holds)", both_webhooks_evicted),
    Scenario("leader-deleted-1", "reconciler leader deleted (1 replica)", leader_deleted),
    Scenario(
        "leader-deleted-2",
        "reconciler leader deleted (2 replicas)",
        leader_deleted,
        prepare=two_reconcilers,
        cleanup=one_reconciler,
    ),
    Scenario("kubelet-30", "kubelet stopped 30 s", kubelet_stopped(30.0)),
    Scenario("kubelet-75", "kubelet stopped 75 s (node NotReady)", kubelet_stopped(75.0), node_not_ready=True),
    Scenario("webhooks-deleted", "both webhook pods deleted", both_webhooks_deleted),
    Scenario("reinstall", "`helm uninstall` then `helm install`", reinstall(delete_lease=False), uninstalls=True),
    Scenario(
        "reinstall-no-lease",
        "the same with the left-over Lease deleted by hand",
        reinstall(delete_lease=True),
        uninstalls=True,
    ),
    Scenario("frozen", "one webhook frozen (SIGSTOP) for 20 s", webhook_frozen(20.0), freezes_a_webhook=True),
)
