"""Our reconciler process against a real kube-apiserver v1.36: it converges, restores drift, recreates what is
deleted by hand, prunes what is no longer wanted, goes idle with 0 writes, its children are garbage-collected by
kube-controller-manager, and of two replicas only the Lease holder writes.

Expected children follow docs/design/synthesis.md §2 (`tests.e2e.user.children_names`); the same paths against
the fake API server are tests/e2e/test_user_path.py and tests/reconciler/.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.harness import FULLNAME, raw_exchange, raw_request, wait_for
from tests.e2e.user import (
    AUTOSCALING_BINDINGS,
    CHILD_KINDS,
    MODEL_SERVERS,
    MODEL_SERVINGS,
    children_names,
    condition,
    create_booster,
    custom,
    get_object,
    load_example,
    mark_serving,
    renamed,
    wait_condition,
    wait_gone,
)
from tests.realapi.controlplane import RealCluster
from tests.realapi.reconciler import RunningReconciler, running_reconciler
from tests.realapi.session import RealSession
from tests.realapi.webhook import Registration

Obj = dict[str, Any]
WRITES: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LEASE: Final = f"{FULLNAME}-reconciler"
TIMEOUT: Final = 30.0  # generous: the machine is shared; a healthy run takes a second or two


def children(session: RealSession, namespace: str) -> dict[tuple[str, str], set[str]]:
    found = {}
    for group, plural in CHILD_KINDS:
        items = custom(session).list_namespaced_custom_object(group, "v1alpha1", namespace, plural)["items"]
        found[(group, plural)] = {item["metadata"]["name"] for item in items}
    return found


def versions(session: RealSession, namespace: str) -> dict[tuple[str, str], str]:
    """(plural, name) -> resourceVersion of every ModelBooster and child in the namespace."""
    found = {}
    for group, plural in (("workload.serving.volcano.sh", "modelboosters"), *CHILD_KINDS):
        items = custom(session).list_namespaced_custom_object(group, "v1alpha1", namespace, plural)["items"]
        found.update({(plural, item["metadata"]["name"]): item["metadata"]["resourceVersion"] for item in items})
    return found


def writes(reconciler: RunningReconciler) -> float:
    """Write requests the reconciler has sent so far (its own `rest_client_requests_total`)."""
    total = 0.0
    for family in text_string_to_metric_families(reconciler.scrape()):
        if family.name == "rest_client_requests":
            total += sum(s.value for s in family.samples if s.name.endswith("_total") and s.labels["method"] in WRITES)
    return total


def is_leader(reconciler: RunningReconciler) -> bool:
    for family in text_string_to_metric_families(reconciler.scrape()):
        if family.name == "leader_election_master_status":
            return any(sample.value == 1 for sample in family.samples)
    return False


@pytest.fixture
def reconcile(
    real_api: RealCluster, real_crds: list[Obj], real_namespace: str, real_user: RealSession, tmp_path: Path
) -> Iterator[Callable[..., RunningReconciler]]:
    """Start reconcilers for `real_namespace` (`reconcile(name=..., leader_elect=...)`); all stopped at the end."""
    with ExitStack() as stack:

        def start(name: str = "reconciler", *, leader_elect: bool = False) -> RunningReconciler:
            running = stack.enter_context(
                running_reconciler(real_api, namespace=real_namespace, workdir=tmp_path, name=name,
                                   leader_elect=leader_elect)
            )  # fmt: skip
            real_user.processes.append(running.process)
            return running

        yield start


def test_converges_to_initialized_then_active(reconcile: Any, real_namespace: str, real_user: RealSession) -> None:
    booster = renamed(load_example("single-vllm-cpu.yaml"), "qwen", real_namespace)
    uid = create_booster(real_user, booster)["metadata"]["uid"]
    reconcile()

    initialized = wait_condition(real_user, real_namespace, "qwen", "Initialized", "True", timeout=TIMEOUT)
    assert children(real_user, real_namespace) == children_names(initialized)
    for kind, names in children_names(initialized).items():
        for name in names:
            child = get_object(real_user, kind, real_namespace, name)
            assert child is not None
            (owner,) = child["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["uid"]) == ("ModelBooster", "qwen", uid)
            assert (owner["controller"], owner["blockOwnerDeletion"]) == (True, True)

    (serving,) = children_names(initialized)[MODEL_SERVINGS]
    mark_serving(real_user, real_namespace, serving, available=True, replicas=1)
    active = wait_condition(real_user, real_namespace, "qwen", "Active", "True", timeout=TIMEOUT)
    assert active["status"]["backendStatuses"] == [{"name": "cpu", "replicas": 1}]


def test_restores_drift_recreates_and_prunes(reconcile: Any, real_namespace: str, real_user: RealSession) -> None:
    booster = renamed(load_example("two-backends-model-autoscaling-lora.yaml"), "pair", real_namespace)
    create_booster(real_user, booster)
    reconcile()
    wait_condition(real_user, real_namespace, "pair", "Initialized", "True", timeout=TIMEOUT)
    serving = get_object(real_user, MODEL_SERVINGS, real_namespace, "pair-a100")
    server = get_object(real_user, MODEL_SERVERS, real_namespace, "pair-a100")
    assert serving is not None
    assert server is not None

    # Drift: a hand edit of a child's spec is put back.
    drifted = copy.deepcopy(serving["spec"])
    drifted["schedulerName"] = "hand-edited"
    custom(real_user).patch_namespaced_custom_object(
        MODEL_SERVINGS[0], "v1alpha1", real_namespace, MODEL_SERVINGS[1], "pair-a100", {"spec": drifted}
    )
    wait_for(
        lambda: (
            (get_object(real_user, MODEL_SERVINGS, real_namespace, "pair-a100") or {}).get("spec") == serving["spec"]
        ),
        timeout=TIMEOUT,
        what="the hand-edited ModelServing to be restored",
    )

    # Deleted by hand: recreated, same spec, new object.
    custom(real_user).delete_namespaced_custom_object(
        MODEL_SERVERS[0], "v1alpha1", real_namespace, MODEL_SERVERS[1], "pair-a100"
    )
    back = wait_for(
        lambda: (
            (obj := get_object(real_user, MODEL_SERVERS, real_namespace, "pair-a100"))
            and obj["metadata"]["uid"] != server["metadata"]["uid"]
            and obj
        ),
        timeout=TIMEOUT,
        what="the deleted ModelServer to be recreated",
    )
    assert back["spec"] == server["spec"]

    # A backend removed: its children are pruned by the reconciler (no garbage collector runs here).
    stored = custom(real_user).get_namespaced_custom_object(
        "workload.serving.volcano.sh", "v1alpha1", real_namespace, "modelboosters", "pair"
    )
    stored["spec"]["backends"] = [b for b in stored["spec"]["backends"] if b["name"] == "a100"]
    custom(real_user).replace_namespaced_custom_object(
        "workload.serving.volcano.sh", "v1alpha1", real_namespace, "modelboosters", "pair", stored
    )
    wait_gone(real_user, MODEL_SERVINGS, real_namespace, "pair-l4", timeout=TIMEOUT)
    wait_gone(real_user, MODEL_SERVERS, real_namespace, "pair-l4", timeout=TIMEOUT)
    settled = wait_condition(real_user, real_namespace, "pair", "Initialized", "True", timeout=TIMEOUT)
    assert children(real_user, real_namespace) == children_names(settled)


def test_goes_idle_with_zero_writes(reconcile: Any, real_namespace: str, real_user: RealSession) -> None:
    for example, name in (("single-vllm-cpu.yaml", "one"), ("two-backends-model-autoscaling-lora.yaml", "two")):
        create_booster(real_user, renamed(load_example(example), name, real_namespace))
    reconciler = reconcile()
    for name in ("one", "two"):
        wait_condition(real_user, real_namespace, name, "Initialized", "True", timeout=TIMEOUT)
        wait_condition(real_user, real_namespace, name, "Active", "False", timeout=TIMEOUT)

    def quiet_for_a_second() -> bool:
        before = writes(reconciler)
        time.sleep(1.0)
        return writes(reconciler) == before

    wait_for(quiet_for_a_second, timeout=TIMEOUT, what="the reconciler to stop writing")
    before, stored = writes(reconciler), versions(real_user, real_namespace)
    time.sleep(3.0)
    assert writes(reconciler) - before == 0
    assert versions(real_user, real_namespace) == stored
    real_user.check_processes()


def test_children_are_garbage_collected_by_kube_controller_manager(
    real_api_gc: RealCluster, real_crds: list[Obj], real_namespace: str, real_user: RealSession, tmp_path: Path
) -> None:
    booster = renamed(load_example("two-backends-model-autoscaling-lora.yaml"), "collected", real_namespace)
    create_booster(real_user, booster)
    with running_reconciler(real_api_gc, namespace=real_namespace, workdir=tmp_path) as reconciler:
        real_user.processes.append(reconciler.process)
        initialized = wait_condition(real_user, real_namespace, "collected", "Initialized", "True", timeout=TIMEOUT)
        real_user.processes.clear()
    # The reconciler is stopped: only kube-controller-manager's garbage collector can delete the children now.
    wanted = children_names(initialized)
    assert children(real_user, real_namespace) == wanted
    custom(real_user).delete_namespaced_custom_object(
        "workload.serving.volcano.sh", "v1alpha1", real_namespace, "modelboosters", "collected"
    )
    for kind, names in wanted.items():
        for name in names:
            wait_gone(real_user, kind, real_namespace, name, timeout=TIMEOUT)


def test_foreground_deletion_through_the_webhook_completes(
    real_api_gc: RealCluster, real_webhook: Registration, real_user: RealSession, tmp_path: Path
) -> None:
    """The garbage collector's own UPDATE (removing `foregroundDeletion`) goes through our webhooks and CRD
    validation (so kube-apiserver v1.36 does): it must be admitted, or the object stays terminating."""
    namespace = real_webhook.namespace
    booster = renamed(load_example("single-vllm-cpu.yaml"), "foreground", namespace)
    create_booster(real_user, booster)
    with running_reconciler(real_api_gc, namespace=namespace, workdir=tmp_path) as reconciler:
        real_user.processes.append(reconciler.process)
        initialized = wait_condition(real_user, namespace, "foreground", "Initialized", "True", timeout=TIMEOUT)
        real_user.processes.clear()
    custom(real_user).delete_namespaced_custom_object(
        "workload.serving.volcano.sh", "v1alpha1", namespace, "modelboosters", "foreground",
        propagation_policy="Foreground",
    )  # fmt: skip
    wait_gone(real_user, ("workload.serving.volcano.sh", "modelboosters"), namespace, "foreground", timeout=TIMEOUT)
    for kind, names in children_names(initialized).items():
        for name in names:
            assert get_object(real_user, kind, namespace, name) is None


def test_of_two_replicas_only_the_lease_holder_writes(
    reconcile: Any, real_namespace: str, real_user: RealSession, real_client: Any
) -> None:
    first = reconcile("replica-a", leader_elect=True)
    second = reconcile("replica-b", leader_elect=True)
    leader = wait_for(lambda: next((r for r in (first, second) if is_leader(r)), None), timeout=TIMEOUT,
                      what="a leader")  # fmt: skip
    follower = second if leader is first else first
    lease = raw_request(real_client, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{real_namespace}/leases/{LEASE}")
    assert lease["spec"]["holderIdentity"].startswith(f"{leader.pod_name}_")
    follower_writes = writes(follower)

    create_booster(real_user, renamed(load_example("single-vllm-cpu.yaml"), "led", real_namespace))
    wait_condition(real_user, real_namespace, "led", "Initialized", "True", timeout=TIMEOUT)
    assert not is_leader(follower)
    assert writes(follower) == follower_writes

    # The leader goes away (SIGTERM releases the Lease): the other replica takes over and does the work.
    leader.process.stop()
    real_user.processes.remove(leader.process)
    wait_for(lambda: is_leader(follower), timeout=TIMEOUT, what="the second replica to take the Lease")
    create_booster(real_user, renamed(load_example("single-vllm-cpu.yaml"), "after", real_namespace))
    wait_condition(real_user, real_namespace, "after", "Initialized", "True", timeout=TIMEOUT)
    led = get_object(real_user, ("workload.serving.volcano.sh", "modelboosters"), real_namespace, "led")
    assert condition(led, "Initialized") is not None


def test_a_kthena_v04_object_converges_with_its_policy_and_binding(
    reconcile: Any, real_namespace: str, real_user: RealSession
) -> None:
    """Kthena v0.2-v0.4's shape (docs/design/api.md §8): the model-level policy scales the one backend, and the
    AutoscalingPolicy and Binding named after it are stored by our child CRDs as rendered, nothing pruned."""
    booster = renamed(load_example("single-backend-autoscaling-kthena-v04.yaml"), "scaled", real_namespace)
    create_booster(real_user, booster)
    reconcile()

    initialized = wait_condition(real_user, real_namespace, "scaled", "Initialized", "True", timeout=TIMEOUT)
    assert children(real_user, real_namespace) == children_names(initialized)
    assert children_names(initialized)[AUTOSCALING_BINDINGS] == {"scaled-gpu"}
    binding = get_object(real_user, AUTOSCALING_BINDINGS, real_namespace, "scaled-gpu")
    assert binding is not None
    scaling = binding["spec"]["scalingConfiguration"]
    assert (scaling["minReplicas"], scaling["maxReplicas"]) == (1, 4)
    assert scaling["target"]["targetRef"] == {"kind": "ModelServing", "name": "scaled-gpu"}
    assert "backends" not in initialized["spec"]
    assert "costExpansionRatePercent" not in initialized["spec"]


def _roles(session: RealSession, namespace: str, name: str) -> dict[str, int]:
    serving = get_object(session, MODEL_SERVINGS, namespace, name) or {}
    return {role["name"]: role["replicas"] for role in serving["spec"]["template"]["roles"]}


def _scale_role(session: RealSession, namespace: str, serving: str, role: str, replicas: int) -> None:
    """What Inferno sends: a JSON patch, tested against the role's name and replicas, under its own manager."""
    live = get_object(session, MODEL_SERVINGS, namespace, serving) or {}
    index = [r["name"] for r in live["spec"]["template"]["roles"]].index(role)
    at = f"/spec/template/roles/{index}"
    patch = [{"op": "test", "path": f"{at}/name", "value": role},
             {"op": "replace", "path": f"{at}/replicas", "value": replicas}]  # fmt: skip
    path = (f"/apis/{MODEL_SERVINGS[0]}/v1alpha1/namespaces/{namespace}/{MODEL_SERVINGS[1]}/{serving}"
            "?fieldManager=modelbooster-inferno")  # fmt: skip
    raw_exchange(session.user, "PATCH", path, body=patch, content_type="application/json-patch+json")


def test_role_replicas_set_from_outside_stay_with_the_opt_in_and_are_restored_without(
    reconcile: Any, real_namespace: str, real_user: RealSession
) -> None:
    """docs/design/reconciler.md §16 on a real server: another manager's JSON patch of a role's replicas makes it
    the owner of the whole (atomic) roles list; with the external-replicas opt-in the reconciler's applies and
    foreign-field check leave that value, and no write follows; without it the rendered value comes back."""
    scaled = renamed(load_example("pd-disaggregation-nixl.yaml"), "scaled", real_namespace)
    scaled["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "true"}
    fixed = renamed(load_example("pd-disaggregation-nixl.yaml"), "fixed", real_namespace)
    for booster in (scaled, fixed):
        create_booster(real_user, booster)
    reconciler = reconcile()
    for name in ("scaled", "fixed"):
        wait_condition(real_user, real_namespace, name, "Initialized", "True", timeout=TIMEOUT)
    assert _roles(real_user, real_namespace, "scaled-pd") == {"prefill": 2, "decode": 1}  # the workers' replicas
    before = get_object(real_user, MODEL_SERVINGS, real_namespace, "scaled-pd") or {}

    _scale_role(real_user, real_namespace, "scaled-pd", "prefill", 4)
    _scale_role(real_user, real_namespace, "scaled-pd", "decode", 3)
    _scale_role(real_user, real_namespace, "fixed-pd", "decode", 3)
    for name in ("scaled", "fixed"):  # every child of both is reconciled again
        custom(real_user).patch_namespaced_custom_object(
            "workload.serving.volcano.sh", "v1alpha1", real_namespace, "modelboosters", name,
            {"metadata": {"labels": {"team": "ml"}}},
        )  # fmt: skip
    wait_for(lambda: _roles(real_user, real_namespace, "fixed-pd") == {"prefill": 2, "decode": 1}, timeout=TIMEOUT,
             what="the role replicas of the ModelBooster without the opt-in to be restored")  # fmt: skip

    def quiet_for_a_second() -> bool:
        written = writes(reconciler)
        time.sleep(1.0)
        return writes(reconciler) == written

    wait_for(quiet_for_a_second, timeout=TIMEOUT, what="the reconciler to stop writing")
    after = get_object(real_user, MODEL_SERVINGS, real_namespace, "scaled-pd") or {}
    assert _roles(real_user, real_namespace, "scaled-pd") == {"prefill": 4, "decode": 3}
    # No rollout: only the two role writes moved the spec, and the recorded template digest is the same.
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 2
    template = "modelbooster.io/template"
    assert after["metadata"]["annotations"][template] == before["metadata"]["annotations"][template]
    real_user.check_processes()
