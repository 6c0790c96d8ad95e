"""Adoption done deliberately, as Kubernetes' controllers do (docs/design/reconciler.md §4): orphans that carry our
labels, or whose reference names this ModelBooster without `controller: true`, are adopted; an object
controlled by something else is refused with a condition and an Event naming it and the command that frees the
name; when the blocking object goes, the ModelBooster converges at once (a watch on it), not after backoff."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reconciler.modelbooster.kinds import (
    AUTOSCALING_POLICY,
    AUTOSCALING_POLICY_BINDING,
    MODEL_BOOSTER,
    MODEL_ROUTE,
    MODEL_SERVER,
    MODEL_SERVING,
)
from shared.constants import LABEL_MANAGED_BY, LABEL_MODEL_NAME, LABEL_MODEL_UID, MANAGED_BY_VALUE
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, Cluster, RunningReconciler, backend, booster, eventually, model_level, quiet
from tests.reconciler.test_ownership import foreign_server

KINDS = (MODEL_SERVING, MODEL_SERVER, MODEL_ROUTE, AUTOSCALING_POLICY, AUTOSCALING_POLICY_BINDING)


def controllers(cluster: Cluster) -> dict[str, list[tuple[str, bool]]]:
    """Per child, (owner uid, controller) of each ownerReference."""
    result = {}
    for kind in KINDS:
        for name in cluster.names(kind):
            obj = cluster.get(kind, name) or {}
            refs = obj["metadata"].get("ownerReferences") or []
            result[f"{kind.kind}/{name}"] = [(r["uid"], bool(r.get("controller"))) for r in refs]
    return result


async def converged(cluster: Cluster, reconciler: RunningReconciler, name: str = "m") -> None:
    await eventually(lambda: cluster.condition(name, "Initialized") == "True", message="Initialized")
    controller = reconciler.manager.controllers[0]
    await eventually(lambda: len(controller.queue) == 0 and not controller.queue.processing())
    await quiet(0.2)


async def test_cascade_orphan_then_reapply_adopts_every_child_and_gc_works_again(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await converged(cluster, reconciler)
    children = controllers(cluster)
    # kubectl delete modelbooster m --cascade=orphan
    await cluster.client.delete(MODEL_BOOSTER, NS, "m", propagation="Orphan")
    await eventually(lambda: cluster.get(MODEL_BOOSTER, "m") is None)
    await eventually(lambda: all(refs == [] for refs in controllers(cluster).values()), message="orphaned")
    assert controllers(cluster).keys() == children.keys()

    cluster.fake.requests.clear()
    again = cluster.create_booster(model_level(backend("a"), backend("b")))
    uid = again["metadata"]["uid"]
    await eventually(lambda: all(refs == [(uid, True)] for refs in controllers(cluster).values()), message="adopted")
    await converged(cluster, reconciler)
    assert cluster.condition("m", "Failed") == "False"
    assert not any(e.verb == "create" for e in reconciler.writes() if e.resource not in ("events", "modelboosters"))
    adopted = cluster.events("Adopted")
    assert len(adopted) == 1
    assert "ModelServing ns/m-a" in adopted[0]["message"]
    for kind in KINDS:  # relabelled with the new uid, so pruning and the uid index see them
        for name in cluster.names(kind):
            assert (cluster.get(kind, name) or {})["metadata"]["labels"][LABEL_MODEL_UID] == uid

    # Adopted children go with their ModelBooster again.
    await cluster.delete(MODEL_BOOSTER, "m")
    await eventually(lambda: all(cluster.names(kind) == [] for kind in KINDS), message="garbage-collected")


async def _ours_then(cluster: Cluster, reconciler: RunningReconciler, refs: Callable[[str], list[dict[str, Any]]]
                     ) -> tuple[str, dict[str, Any]]:  # fmt: skip
    created = cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    uid = created["metadata"]["uid"]
    cluster.fake.requests.clear()
    changed = await cluster.patch(MODEL_SERVER, "m-a", {"metadata": {"ownerReferences": refs(uid)}}, manager="someone")
    return uid, changed


async def test_a_child_whose_owner_reference_was_removed_is_adopted(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    uid, changed = await _ours_then(cluster, reconciler, lambda uid: [])
    assert "ownerReferences" not in changed["metadata"]
    await eventually(lambda: controllers(cluster)["ModelServer/m-a"] == [(uid, True)], message="adopted")
    await quiet(0.3)
    assert [(e.verb, e.name) for e in reconciler.writes() if e.resource == "modelservers"] == [("patch", "m-a")]
    assert cluster.condition("m", "Failed") == "False"
    assert "ModelServer ns/m-a" in cluster.events("Adopted")[0]["message"]


async def test_a_reference_naming_us_without_controller_is_made_controlling_again(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    def not_controlling(uid: str) -> list[dict[str, Any]]:
        return [{"apiVersion": MODEL_BOOSTER.api_version, "kind": "ModelBooster", "name": "m", "uid": uid,
                 "controller": False}]  # fmt: skip

    uid, changed = await _ours_then(cluster, reconciler, not_controlling)
    assert changed["metadata"]["ownerReferences"][0]["controller"] is False
    await eventually(lambda: controllers(cluster)["ModelServer/m-a"] == [(uid, True)], message="adopted")
    assert cluster.condition("m", "Failed") == "False"


async def test_a_child_controlled_by_something_else_is_refused_with_the_command_that_frees_it(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    other = cluster.create_booster(booster("other", backend("x")))
    owner = {"apiVersion": MODEL_BOOSTER.api_version, "kind": "ModelBooster", "name": "other",
             "uid": other["metadata"]["uid"], "controller": True}  # fmt: skip
    server = foreign_server("m-a", owner=owner)
    server["metadata"]["labels"].update({LABEL_MANAGED_BY: MANAGED_BY_VALUE, LABEL_MODEL_NAME: "m"})
    fake.create(server)
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    failed = cluster.conditions()["Failed"]
    assert failed["reason"] == "OwnershipConflict"
    command = "kubectl delete modelservers.networking.serving.volcano.sh -n ns m-a"
    assert "ModelServer ns/m-a already exists and is controlled by ModelBooster other" in failed["message"]
    assert command in failed["message"]
    await eventually(lambda: cluster.events("OwnershipConflict"))
    assert command in cluster.events("OwnershipConflict")[0]["message"]
    assert (cluster.get(MODEL_SERVER, "m-a") or {})["metadata"]["ownerReferences"][0]["name"] == "other"


async def test_a_blocking_object_deleted_lets_the_model_booster_converge_within_two_seconds(
    cluster: Cluster, fake: FakeApiServer, start_reconciler: Callable[..., Any]
) -> None:
    """Backoff is set long here (5 s doubling): only noticing the deletion itself can converge in time."""
    await start_reconciler(backoff_base=5.0, backoff_max=1000.0)
    fake.create(foreign_server("m-a"))  # no labels of ours, no owner: outside every cache of the reconciler
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    await quiet(0.5)  # the retry is now seconds away
    await cluster.delete(MODEL_SERVER, "m-a")
    await eventually(lambda: cluster.condition("m", "Failed") == "False", within=2.0, message="converged")
    ours = cluster.get(MODEL_SERVER, "m-a") or {}
    assert ours["metadata"]["ownerReferences"][0]["name"] == "m"


async def test_an_unlabelled_object_without_owner_is_not_adopted(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler
) -> None:
    """Carrying our name is not enough: without our labels it may be anyone's."""
    theirs = fake.create(foreign_server("m-a"))
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Failed") == "True")
    await quiet(0.3)
    kept = cluster.get(MODEL_SERVER, "m-a") or {}
    assert kept["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    assert "give it our labels, and it is adopted" in cluster.conditions()["Failed"]["message"]


async def test_a_child_that_lost_our_label_is_read_after_already_exists_and_relabelled_once(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """Out of the label-filtered cache, the child meets `409 AlreadyExists` on create; the object is read, found
    ours, relabelled with one write, and not created again."""
    cluster.create_booster(booster("m", backend("a")))
    await converged(cluster, reconciler)
    cluster.fake.requests.clear()
    await cluster.patch(MODEL_SERVER, "m-a", {"metadata": {"labels": {LABEL_MANAGED_BY: None}}})
    await eventually(lambda: (cluster.get(MODEL_SERVER, "m-a") or {})["metadata"]["labels"].get(LABEL_MANAGED_BY)
                     == MANAGED_BY_VALUE, message="relabelled")  # fmt: skip
    await quiet(0.5)
    server_requests = [(e.verb, e.status) for e in reconciler.fake.requests.entries()
                       if e.user_agent == reconciler.user_agent and e.resource == "modelservers"
                       and e.verb in ("create", "get", "patch")]  # fmt: skip
    assert server_requests == [("create", 409), ("get", 200), ("patch", 200)]
    assert cluster.condition("m", "Failed") == "False"


async def test_orphans_the_re_applied_model_booster_no_longer_wants_are_deleted(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """As a ReplicaSet adopts matching orphans and scales away the excess: re-applied with one backend and no
    autoscaling, the other backend's children and the autoscaling pair are deleted, the rest adopted."""
    cluster.create_booster(model_level(backend("a"), backend("b")))
    await converged(cluster, reconciler)
    await cluster.client.delete(MODEL_BOOSTER, NS, "m", propagation="Orphan")
    await eventually(lambda: cluster.get(MODEL_BOOSTER, "m") is None)
    await eventually(lambda: all(refs == [] for refs in controllers(cluster).values()), message="orphaned")

    again = cluster.create_booster(booster("m", backend("a")))
    uid = again["metadata"]["uid"]
    await eventually(lambda: cluster.children() == {
        "ModelServing": ["m-a"], "ModelServer": ["m-a"], "ModelRoute": ["m"],
        "AutoscalingPolicy": [], "AutoscalingPolicyBinding": []}, message="pruned")  # fmt: skip
    await eventually(lambda: all(refs == [(uid, True)] for refs in controllers(cluster).values()), message="adopted")
    # The status is written after the children, by the same reconcile; its Events are posted beside the status
    # write (concurrently), so they may land just after it.
    await eventually(lambda: cluster.condition("m", "Failed") == "False", message="status written")
    await eventually(lambda: any("ModelServing m-b" in e["message"] for e in cluster.events("Deleted")),
                     message="Deleted event")  # fmt: skip
