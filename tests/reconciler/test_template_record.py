"""Recording what the server stored for our write of a ModelServing (the template digest a mutating webhook makes
differ from the one the write carried): only on the object our write returned, and only while nobody has changed
its pod-shaping spec since (docs/design/reconciler.md §16). Against the fake API server, with the reconciler
stopped so that only the calls under test write."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.modelbooster.apply import RECORD_ATTEMPTS, record_templates
from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.modelbooster.rollout import TemplateRecord, template_digest
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.runtime.apply import Desired
from reconciler.runtime.informer import Informer
from shared.rollout import ANNOTATION_TEMPLATE
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually

Obj = dict[str, Any]
PREDICTED = "what-the-write-carried"


async def stopped_with_serving(cluster: Cluster, reconciler: RunningReconciler) -> tuple[Obj, Informer]:
    """The converged ModelServing `m-a` as our write returned it, recording a digest the server's mutation made
    wrong, and the reconciler's cache."""
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
    await reconciler.stop()
    stored = await cluster.patch(MODEL_SERVING, "m-a", {"metadata": {"annotations": {ANNOTATION_TEMPLATE: PREDICTED}}},
                                 manager="modelbooster")  # fmt: skip
    return stored, reconciler.process.registered_by(MODELBOOSTER).reconciler.children[MODEL_SERVING]


def record_of(stored: Obj) -> TemplateRecord:
    return TemplateRecord(Desired(kind=MODEL_SERVING, obj=copy.deepcopy(stored)), stored, template_digest(stored))


def recorded(cluster: Cluster) -> str | None:
    annotations = (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"].get("annotations") or {}
    value = annotations.get(ANNOTATION_TEMPLATE)
    return value if isinstance(value, str) else None


def serving_requests(cluster: Cluster) -> list[tuple[str, int]]:
    entries = cluster.fake.requests.entries()
    return [(r.verb, r.status) for r in entries if r.resource == "modelservings" and r.name == "m-a"]


async def test_the_record_lands_on_the_object_our_write_returned(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    stored, servings = await stopped_with_serving(cluster, reconciler)
    cluster.fake.requests.clear()
    findings = await record_templates(cluster.client, servings, [record_of(stored)], manager="modelbooster")
    assert findings.ok
    assert recorded(cluster) == template_digest(stored)
    assert serving_requests(cluster) == [("patch", 200)]


async def test_a_write_in_between_that_left_the_pod_shape_is_written_over(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """A label (or an autoscaler's replicas) written after ours: the conditional write conflicts, the object is
    read again, its pod shape is still ours, and the record lands on the new version."""
    stored, servings = await stopped_with_serving(cluster, reconciler)
    await cluster.patch(MODEL_SERVING, "m-a", {"metadata": {"labels": {"team": "search"}}}, manager="kubectl-label")
    cluster.fake.requests.clear()
    findings = await record_templates(cluster.client, servings, [record_of(stored)], manager="modelbooster")
    assert findings.ok
    assert recorded(cluster) == template_digest(stored)
    assert serving_requests(cluster) == [("patch", 409), ("get", 200), ("patch", 200)]
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["labels"]["team"] == "search"


async def test_an_edit_of_the_pod_shape_in_between_is_never_recorded_as_ours(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """Someone changed the template after our write: recording now would make their edit ours (kept, never
    removed). Nothing is written, and it is no failure: their write's event brings the next reconcile."""
    stored, servings = await stopped_with_serving(cluster, reconciler)
    spec = copy.deepcopy(stored["spec"])
    spec["template"]["roles"][0]["entryTemplate"]["spec"]["hostNetwork"] = True
    await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"template": spec["template"]}}, manager="kubectl-edit")
    cluster.fake.requests.clear()
    findings = await record_templates(cluster.client, servings, [record_of(stored)], manager="modelbooster")
    assert findings.ok
    assert recorded(cluster) == PREDICTED
    assert serving_requests(cluster) == [("patch", 409), ("get", 200)]


async def test_a_serving_gone_in_between_is_nothing_to_record(cluster: Cluster, reconciler: RunningReconciler) -> None:
    stored, servings = await stopped_with_serving(cluster, reconciler)
    await cluster.delete(MODEL_SERVING, "m-a")
    await eventually(lambda: cluster.get(MODEL_SERVING, "m-a") is None, message="deleted")
    findings = await record_templates(cluster.client, servings, [record_of(stored)], manager="modelbooster")
    assert findings.ok


async def test_a_writer_that_never_pauses_costs_a_bounded_number_of_attempts(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """Each attempt is overtaken by another write that leaves the pod shape alone: after `RECORD_ATTEMPTS`
    conditional writes the record is left for the next reconcile rather than retried without end."""
    stored, servings = await stopped_with_serving(cluster, reconciler)
    original = cluster.client.get
    bumps = 0

    async def overtaken(*args: Any, **kwargs: Any) -> Obj:
        nonlocal bumps
        fresh: Obj = await original(*args, **kwargs)
        bumps += 1
        await cluster.patch(MODEL_SERVING, "m-a", {"metadata": {"labels": {"bump": str(bumps)}}}, manager="bumper")
        return fresh

    cluster.client.get = overtaken  # type: ignore[method-assign]
    await cluster.patch(MODEL_SERVING, "m-a", {"metadata": {"labels": {"bump": "0"}}}, manager="bumper")
    cluster.fake.requests.clear()
    findings = await record_templates(cluster.client, servings, [record_of(stored)], manager="modelbooster")
    assert findings.ok
    attempts = [status for verb, status in serving_requests(cluster) if verb == "patch"]
    assert attempts.count(409) == RECORD_ATTEMPTS
    assert recorded(cluster) == PREDICTED
