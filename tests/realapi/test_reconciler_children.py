"""On a real kube-apiserver v1.36: children are what the ModelBooster renders. Foreign additions are removed with
one write each, `--cascade=orphan` + re-apply adopts the children (and kube-controller-manager collects them
again afterwards), and a blocking object's deletion lets the ModelBooster converge without waiting out backoff.
The same scenarios against the fake: tests/reconciler/test_foreign_fields.py and test_adoption.py."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any, Final

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.harness import wait_for
from tests.e2e.user import (
    MODEL_SERVERS,
    MODEL_SERVINGS,
    children_names,
    condition,
    create_booster,
    custom,
    get_booster,
    get_object,
    load_example,
    renamed,
    wait_condition,
    wait_gone,
)
from tests.realapi.controlplane import RealCluster
from tests.realapi.reconciler import RunningReconciler, running_reconciler
from tests.realapi.session import RealSession
from tests.realapi.test_reconciler import TIMEOUT, reconcile  # noqa: F401 - the fixture
from tests.reconciler.test_foreign_fields import TAMPERS

Obj = dict[str, Any]
WORKLOAD: Final = "workload.serving.volcano.sh"


def applied(reconciler: RunningReconciler, kind: str, action: str) -> float:
    """`modelbooster_children_applied_total{kind, action}` of the running reconciler."""
    for family in text_string_to_metric_families(reconciler.scrape()):
        if family.name == "modelbooster_children_applied":
            return sum(s.value for s in family.samples
                       if s.name.endswith("_total") and s.labels == {"kind": kind, "action": action})  # fmt: skip
    return 0.0


def test_foreign_additions_are_removed_with_one_write_each(
    reconcile: Any, real_namespace: str, real_user: RealSession  # noqa: F811
) -> None:
    create_booster(real_user, renamed(load_example("single-vllm-cpu.yaml"), "tamper", real_namespace))
    reconciler = reconcile()
    initialized = wait_condition(real_user, real_namespace, "tamper", "Initialized", "True", timeout=TIMEOUT)
    (serving,) = children_names(initialized)[MODEL_SERVINGS]
    before = get_object(real_user, MODEL_SERVINGS, real_namespace, serving)
    assert before is not None
    updates = applied(reconciler, "ModelServing", "updated")
    for name, (tampering, _) in TAMPERS.items():
        spec = copy.deepcopy(before["spec"])
        tampering(spec)
        custom(real_user).patch_namespaced_custom_object(
            WORKLOAD, "v1alpha1", real_namespace, "modelservings", serving, {"spec": {"template": spec["template"]}}
        )
        wait_for(lambda: (get_object(real_user, MODEL_SERVINGS, real_namespace, serving) or {}).get("spec")
                 == before["spec"], timeout=TIMEOUT, what=f"{name} to be removed")  # fmt: skip
    time.sleep(1.0)
    assert applied(reconciler, "ModelServing", "updated") - updates == len(TAMPERS)
    assert condition(get_booster(real_user, real_namespace, "tamper"), "Failed")["status"] == "False"  # type: ignore[index]
    real_user.check_processes()


def _controllers(session: RealSession, namespace: str, wanted: dict[tuple[str, str], set[str]]) -> set[Any]:
    refs = set()
    for kind, names in wanted.items():
        for name in names:
            obj = get_object(session, kind, namespace, name) or {}
            refs.add(tuple((r["uid"], r.get("controller")) for r in obj["metadata"].get("ownerReferences") or ()))
    return refs


def test_cascade_orphan_then_reapply_adopts_and_collection_works_again(
    real_api_gc: RealCluster, real_crds: list[Obj], real_namespace: str, real_user: RealSession, tmp_path: Path
) -> None:
    booster = renamed(load_example("single-vllm-cpu.yaml"), "orphan", real_namespace)
    create_booster(real_user, booster)
    with running_reconciler(real_api_gc, namespace=real_namespace, workdir=tmp_path) as reconciler:
        real_user.processes.append(reconciler.process)
        wanted = children_names(wait_condition(real_user, real_namespace, "orphan", "Initialized", "True",
                                               timeout=TIMEOUT))  # fmt: skip
        custom(real_user).delete_namespaced_custom_object(
            WORKLOAD, "v1alpha1", real_namespace, "modelboosters", "orphan", propagation_policy="Orphan"
        )
        wait_gone(real_user, (WORKLOAD, "modelboosters"), real_namespace, "orphan", timeout=TIMEOUT)
        wait_for(lambda: _controllers(real_user, real_namespace, wanted) == {()}, timeout=TIMEOUT,
                 what="the children to be orphaned")  # fmt: skip
        uid = create_booster(real_user, booster)["metadata"]["uid"]
        wait_for(lambda: _controllers(real_user, real_namespace, wanted) == {((uid, True),)}, timeout=TIMEOUT,
                 what="the children to be adopted")  # fmt: skip
        settled = wait_condition(real_user, real_namespace, "orphan", "Initialized", "True", timeout=TIMEOUT)
        assert condition(settled, "Failed")["status"] == "False"  # type: ignore[index]
        assert applied(reconciler, "ModelServing", "created") == 1  # the first one only: the rest was adopted
        real_user.processes.clear()
    custom(real_user).delete_namespaced_custom_object(WORKLOAD, "v1alpha1", real_namespace, "modelboosters", "orphan")
    for kind, names in wanted.items():
        for name in names:
            wait_gone(real_user, kind, real_namespace, name, timeout=TIMEOUT)


def test_a_deleted_blocking_object_lets_the_model_booster_converge(
    reconcile: Any, real_namespace: str, real_user: RealSession  # noqa: F811
) -> None:
    booster = renamed(load_example("single-vllm-cpu.yaml"), "blocked", real_namespace)
    (blocked,) = children_names(booster)[MODEL_SERVERS]
    theirs = {
        "apiVersion": f"{MODEL_SERVERS[0]}/v1alpha1", "kind": "ModelServer",
        "metadata": {"name": blocked, "namespace": real_namespace, "labels": {"team": "someone-else"}},
        "spec": {"inferenceEngine": "vLLM", "workloadSelector": {"matchLabels": {"app": "theirs"}},
                 "workloadPort": {"port": 1234}},
    }  # fmt: skip
    custom(real_user).create_namespaced_custom_object(MODEL_SERVERS[0], "v1alpha1", real_namespace,
                                                      MODEL_SERVERS[1], theirs)  # fmt: skip
    create_booster(real_user, booster)
    reconcile()
    failed = wait_condition(real_user, real_namespace, "blocked", "Failed", "True", timeout=TIMEOUT)
    assert condition(failed, "Failed")["reason"] == "OwnershipConflict"  # type: ignore[index]
    assert f"kubectl delete modelservers.networking.serving.volcano.sh -n {real_namespace} {blocked}" in \
        condition(failed, "Failed")["message"]  # type: ignore[index]  # fmt: skip
    time.sleep(1.5)  # the retries back off meanwhile (5 ms doubling): the next is a second or more away
    custom(real_user).delete_namespaced_custom_object(MODEL_SERVERS[0], "v1alpha1", real_namespace,
                                                      MODEL_SERVERS[1], blocked)  # fmt: skip
    started = time.monotonic()
    wait_condition(real_user, real_namespace, "blocked", "Failed", "False", timeout=TIMEOUT)
    print(f"converged {time.monotonic() - started:.2f}s after the blocking object was deleted")
    ours = get_object(real_user, MODEL_SERVERS, real_namespace, blocked) or {}
    assert ours["metadata"]["ownerReferences"][0]["name"] == "blocked"


def requests(reconciler: RunningReconciler, method: str) -> float:
    for family in text_string_to_metric_families(reconciler.scrape()):
        if family.name == "rest_client_requests":
            return sum(s.value for s in family.samples if s.name.endswith("_total") and s.labels["method"] == method)
    return 0.0


def test_deleting_a_namespace_with_ten_model_boosters_creates_nothing_and_fails_nothing(
    real_api_gc: RealCluster, real_crds: list[Obj], real_namespace: str, real_user: RealSession, tmp_path: Path
) -> None:
    """kube-controller-manager's namespace controller empties the namespace kind by kind; the reconciler watching
    it sends no create and writes no Failed status, and says so in one line."""
    from kubernetes import client

    names = [f"m{i}" for i in range(10)]
    for name in names:
        create_booster(real_user, renamed(load_example("single-vllm-cpu.yaml"), name, real_namespace))
    with running_reconciler(real_api_gc, namespace=real_namespace, workdir=tmp_path) as reconciler:
        for name in names:
            wait_condition(real_user, real_namespace, name, "Initialized", "True", timeout=TIMEOUT)
        time.sleep(0.5)
        posts = requests(reconciler, "POST")
        client.CoreV1Api(real_user.user).delete_namespace(real_namespace)
        failed_seen: set[str] = set()

        def gone() -> bool:
            items = custom(real_user).list_namespaced_custom_object(WORKLOAD, "v1alpha1", real_namespace,
                                                                    "modelboosters")["items"]  # fmt: skip
            failed_seen.update(i["metadata"]["name"] for i in items if (condition(i, "Failed") or {}).get("status")
                               == "True")  # fmt: skip
            return not items and all(
                not custom(real_user).list_namespaced_custom_object(group, "v1alpha1", real_namespace, plural)["items"]
                for group, plural in (MODEL_SERVINGS, MODEL_SERVERS)
            )

        wait_for(gone, timeout=TIMEOUT, what="the namespace's content to be deleted")
        time.sleep(1.0)
        assert requests(reconciler, "POST") == posts  # no create of a child, no Event post
        assert failed_seen == set()
        log = reconciler.process.log_path.read_text(errors="replace")
        # One line when a reconcile met the deletion (none when every ModelBooster went before its children).
        assert log.count(f"namespace {real_namespace} is being deleted") <= 1, reconciler.process.log_tail()
        assert "Forbidden" not in log


def test_the_three_owner_reference_cases(reconcile: Any, real_namespace: str, real_user: RealSession) -> None:  # noqa: F811
    """Reference removed → adopted; reference naming us without `controller` → adopted; controlled by another
    ModelBooster → refused, with the command that frees the name."""
    uid = create_booster(real_user, renamed(load_example("single-vllm-cpu.yaml"), "owned", real_namespace))[
        "metadata"]["uid"]  # fmt: skip
    other = create_booster(real_user, renamed(load_example("single-vllm-cpu.yaml"), "other", real_namespace))
    reconcile()
    initialized = wait_condition(real_user, real_namespace, "owned", "Initialized", "True", timeout=TIMEOUT)
    wait_condition(real_user, real_namespace, "other", "Initialized", "True", timeout=TIMEOUT)
    (server,) = children_names(initialized)[MODEL_SERVERS]

    def set_refs(refs: list[Obj] | None) -> None:
        custom(real_user).patch_namespaced_custom_object(MODEL_SERVERS[0], "v1alpha1", real_namespace,
                                                         MODEL_SERVERS[1], server,
                                                         {"metadata": {"ownerReferences": refs}})  # fmt: skip

    def controlled_by_us() -> bool:
        refs = (get_object(real_user, MODEL_SERVERS, real_namespace, server) or {})["metadata"].get("ownerReferences")
        return [(r["uid"], r.get("controller")) for r in refs or ()] == [(uid, True)]

    set_refs(None)
    wait_for(controlled_by_us, timeout=TIMEOUT, what="the child without a reference to be adopted")
    set_refs([{"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "name": "owned",
               "uid": uid, "controller": False}])  # fmt: skip
    wait_for(controlled_by_us, timeout=TIMEOUT, what="the child whose reference lost `controller` to be adopted")
    set_refs([{"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelBooster", "name": "other",
               "uid": other["metadata"]["uid"], "controller": True}])  # fmt: skip
    failed = wait_condition(real_user, real_namespace, "owned", "Failed", "True", timeout=TIMEOUT)
    message = condition(failed, "Failed")["message"]  # type: ignore[index]
    assert "controlled by ModelBooster other" in message
    assert f"kubectl delete modelservers.networking.serving.volcano.sh -n {real_namespace} {server}" in message
    assert not controlled_by_us()
