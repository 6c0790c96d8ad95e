"""Children are what the ModelBooster renders: what others add inside a child's spec is removed with one write and
an Event naming it; server defaults and an autoscaler's replicas are left alone, and nothing loops
(docs/design/reconciler.md §5)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from tests.reconciler.harness import (
    Cluster,
    RunningReconciler,
    backend,
    booster,
    eventually,
    model_level,
    quiet,
)

Tamper = Callable[[dict[str, Any]], None]


def role(spec: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = spec["template"]["roles"][0]["entryTemplate"]
    return entry


def engine(spec: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in role(spec)["spec"]["containers"] if c["name"] == "engine")


def privileged(spec: dict[str, Any]) -> None:
    engine(spec).setdefault("securityContext", {})["privileged"] = True


def host_network(spec: dict[str, Any]) -> None:
    role(spec)["spec"]["hostNetwork"] = True


def extra_limit(spec: dict[str, Any]) -> None:
    engine(spec).setdefault("resources", {}).setdefault("limits", {})["nvidia.com/gpu"] = "8"


def extra_env(spec: dict[str, Any]) -> None:
    engine(spec).setdefault("env", []).append({"name": "EXTRA", "value": "from someone else"})


def extra_label(spec: dict[str, Any]) -> None:
    role(spec).setdefault("metadata", {}).setdefault("labels", {})["sidecar.example.com/inject"] = "true"


TAMPERS: dict[str, tuple[Tamper, str]] = {
    "privileged": (privileged, "containers[engine].securityContext"),
    "hostNetwork": (host_network, "entryTemplate.spec.hostNetwork"),
    "extra limit": (extra_limit, "containers[engine].resources.limits.nvidia.com/gpu"),
    "extra env": (extra_env, "containers[engine].env"),
    "extra label": (extra_label, "entryTemplate.metadata.labels.sidecar.example.com/inject"),
}


async def converged(cluster: Cluster, reconciler: RunningReconciler, name: str = "m") -> None:
    await eventually(lambda: cluster.condition(name, "Initialized") == "True", message="Initialized")
    controller = reconciler.manager.controllers[0]
    await eventually(lambda: len(controller.queue) == 0 and not controller.queue.processing())
    await quiet(0.2)


async def cpu_serving(cluster: Cluster, reconciler: RunningReconciler) -> dict[str, Any]:
    """The converged ModelServing `m-a` of a ModelBooster with one CPU server worker."""
    workers = [{"type": "server", "image": "vllm/vllm-openai:v0.10.1", "replicas": 1, "pods": 1,
                "resources": {"limits": {"cpu": "4", "memory": "16Gi"}}}]  # fmt: skip
    cluster.create_booster(booster("m", backend("a", workers=workers)))
    await converged(cluster, reconciler)
    serving = cluster.get(MODEL_SERVING, "m-a")
    assert serving is not None
    return serving


def serving_writes(reconciler: RunningReconciler) -> list[tuple[str, str]]:
    return [(e.verb, e.name) for e in reconciler.writes() if e.resource == "modelservings"]


async def tamper(cluster: Cluster, tampering: Tamper, *, manager: str = "kubectl-patch") -> dict[str, Any]:
    """Change the live ModelServing like `kubectl patch --type=merge` would (lists are replaced whole)."""
    live = cluster.get(MODEL_SERVING, "m-a")
    assert live is not None
    spec = copy.deepcopy(live["spec"])
    tampering(spec)
    return await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"template": spec["template"]}}, manager=manager)


@pytest.mark.parametrize("name", list(TAMPERS))
async def test_a_foreign_addition_is_removed_with_one_write_and_an_event(
    name: str, cluster: Cluster, reconciler: RunningReconciler
) -> None:
    tampering, path = TAMPERS[name]
    before = await cpu_serving(cluster, reconciler)
    cluster.fake.requests.clear()

    tampered = await tamper(cluster, tampering)
    assert tampered["spec"] != before["spec"]
    await eventually(lambda: (cluster.get(MODEL_SERVING, "m-a") or {})["spec"] == before["spec"], message="removed")
    await quiet(0.3)
    assert serving_writes(reconciler) == [("patch", "m-a")]
    events = cluster.events("ForeignFieldsRemoved")
    assert len(events) == 1
    assert events[0]["type"] == "Warning"
    assert "ModelServing ns/m-a" in events[0]["message"]
    assert path in events[0]["message"]
    assert "(set by kubectl-patch)" in events[0]["message"]
    assert cluster.condition("m", "Failed") == "False"


async def test_a_foreign_key_outside_lists_is_removed_and_the_server_default_comes_back(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """`recoveryPolicy` is not rendered: the server defaults it. Someone's value is removed (a null in the merge
    patch), the default returns, and the default itself never makes a write."""
    cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    default = (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["recoveryPolicy"]
    cluster.fake.requests.clear()
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"recoveryPolicy": "None"}}, manager="kubectl-edit")
    await eventually(lambda: (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["recoveryPolicy"] == default)
    await quiet(0.3)
    assert serving_writes(reconciler) == [("patch", "m-a")]
    assert "spec.recoveryPolicy (set by kubectl-edit)" in cluster.events("ForeignFieldsRemoved")[0]["message"]


async def test_idle_resyncs_write_nothing_after_tampering_defaults_and_autoscaling(
    cluster: Cluster, start_reconciler: Callable[..., Any]
) -> None:
    """Many resync periods (0.1 s here) over children holding server defaults, an autoscaler's replicas, a
    removed tamper, and a copy of the child re-applied by someone else (their manager then owns our values plus
    the server's defaults): one corrective write at most each, then none."""
    reconciler: RunningReconciler = await start_reconciler(resync_period=0.1)
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await converged(cluster, reconciler)
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"replicas": 3}}, manager="autoscaler")
    await tamper(cluster, privileged)
    live_b = cluster.get(MODEL_SERVING, "m-b") or {}
    await cluster.patch(MODEL_SERVING, "m-b", {"spec": {"template": live_b["spec"]["template"]}}, manager="kubectl")
    await quiet(1.0)
    assert "privileged" not in str(cluster.get(MODEL_SERVING, "m-a"))
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["replicas"] == 3

    cluster.fake.requests.clear()
    resyncs = reconciler.metric("controller_runtime_reconcile_total", controller="modelbooster", result="success")
    await quiet(2.0)
    assert reconciler.writes() == []
    after = reconciler.metric("controller_runtime_reconcile_total", controller="modelbooster", result="success")
    assert after - resyncs >= 10  # the reconciles did run


async def test_a_field_someone_keeps_re_adding_is_given_up_after_three_removals(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """Another controller re-adding what we remove is a fight no write wins: three removals, then it is left
    as it is with a Warning event, and no more writes."""
    cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    cluster.fake.requests.clear()
    for _ in range(4):
        await tamper(cluster, host_network, manager="policy-engine")
        await quiet(0.3)
    assert serving_writes(reconciler) == [("patch", "m-a")] * 3
    await eventually(lambda: cluster.events("ForeignFieldsKept"))
    assert "hostNetwork (set by policy-engine)" in cluster.events("ForeignFieldsKept")[0]["message"]
    assert role((cluster.get(MODEL_SERVING, "m-a") or {})["spec"])["spec"]["hostNetwork"] is True


async def test_an_edit_between_the_removal_and_the_template_record_is_removed_too(
    cluster: Cluster, reconciler: RunningReconciler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone edits the template again just after our corrective write, and the watch brings their edit before
    the reconcile records the digest of what the server stored. What is recorded is our write, never the cache's
    newer object: their edit is not taken for ours (and kept), it is removed by the next reconcile."""
    before = await cpu_serving(cluster, reconciler)
    servings = reconciler.process.registered_by(MODELBOOSTER).reconciler.children[MODEL_SERVING]
    original = reconciler.client.patch
    raced: list[str] = []

    async def patch(kind: Any, namespace: Any, name: str, body: Any, **kwargs: Any) -> dict[str, Any]:
        stored = await original(kind, namespace, name, body, **kwargs)
        if kind == MODEL_SERVING and not raced and "spec" in body:  # the removal patch, not the record's
            edited = await tamper(cluster, extra_env, manager="kubectl-edit")
            raced.append(edited["metadata"]["resourceVersion"])
            await eventually(lambda: (servings.get("ns", "m-a") or {})["metadata"]["resourceVersion"] == raced[0])
        return stored

    monkeypatch.setattr(reconciler.client, "patch", patch)
    await tamper(cluster, privileged)
    await eventually(lambda: bool(raced), message="the edit raced the record")
    await eventually(lambda: (cluster.get(MODEL_SERVING, "m-a") or {})["spec"] == before["spec"], message="removed")

    def removals() -> list[str]:
        return [event["message"] for event in cluster.events("ForeignFieldsRemoved")]

    # The Event follows the write that removed the edit: posted after it, so waited for.
    await eventually(lambda: any("env" in m and "(set by kubectl-edit)" in m for m in removals()), message="its Event")
    assert any("securityContext (set by kubectl-patch)" in m for m in removals()), removals()
