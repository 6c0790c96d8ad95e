"""Our reconciler process on a real kube-apiserver v1.36 whose child CRDs are shaped like each generation of
Kthena's own (tests/reconciler/kthena_crds.py, written from the facts), and with the Binding CRD appearing and
disappearing while it runs. The same scenarios against the fake API server: tests/reconciler/test_kthena_generations.py.

The child CRDs are cluster-wide: each test installs its generation's set over the chart's (server-side apply by
the same field manager, so fields the generation lacks are removed from the schema) and puts the chart's back.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from tests.e2e.harness import wait_for
from tests.e2e.user import condition, create_booster, custom, get_object, wait_condition
from tests.realapi.controlplane import RealCluster
from tests.realapi.crds import apply_crds, chart_crds, delete_crds
from tests.realapi.reconciler import RunningReconciler, running_reconciler
from tests.realapi.session import RealSession
from tests.realapi.test_reconciler import writes
from tests.reconciler.kthena_crds import binding_crd, child_crds
from tests.reconciler.test_kthena_generations import EXPECTED_SCALED, plain, scaled

Obj = dict[str, Any]
WORKLOAD: Final = "workload.serving.volcano.sh"
BINDINGS: Final = (WORKLOAD, "autoscalingpolicybindings")
POLICIES: Final = (WORKLOAD, "autoscalingpolicies")
SERVINGS: Final = (WORKLOAD, "modelservings")
BINDING_CRD: Final = f"autoscalingpolicybindings.{WORKLOAD}"
TIMEOUT: Final = 30.0


def _in(namespace: str, document: Obj) -> Obj:
    placed = copy.deepcopy(document)
    placed["metadata"]["namespace"] = namespace
    return placed


@pytest.fixture
def child_crds_of(real_api: RealCluster, real_crds: list[Obj]) -> Iterator[Any]:
    """`child_crds_of(generation, binding=True)` installs that generation's child CRDs; the chart's come back."""
    with real_api.api_client() as api:

        def install(generation: str, *, binding: bool = True) -> None:
            crds = child_crds(generation, binding=binding)
            apply_crds(api, crds)
            if not any(crd["metadata"]["name"] == BINDING_CRD for crd in crds):
                delete_crds(api, [BINDING_CRD])

        try:
            yield install
        finally:
            apply_crds(api, chart_crds())


@pytest.fixture
def reconciling(real_api: RealCluster, real_namespace: str, real_user: RealSession, tmp_path: Path) -> Any:
    """`with reconciling() as reconciler:` runs our reconciler process for `real_namespace`."""

    @contextlib.contextmanager
    def run() -> Iterator[RunningReconciler]:
        with running_reconciler(real_api, namespace=real_namespace, workdir=tmp_path) as reconciler:
            real_user.processes.append(reconciler.process)
            yield reconciler

    return run


def _events(session: RealSession, namespace: str, reason: str) -> list[Obj]:
    from kubernetes import client

    items = client.CoreV1Api(session.user).list_namespaced_event(namespace).items
    return [e.to_dict() for e in items if e.reason == reason]


def _converged(session: RealSession, namespace: str, name: str) -> Obj:
    def done() -> Obj | None:
        obj = get_object(session, (WORKLOAD, "modelboosters"), namespace, name)
        initialized, failed = condition(obj, "Initialized"), condition(obj, "Failed")
        ok = initialized and initialized["status"] == "True" and failed and failed["status"] == "False"
        return obj if ok else None

    found: Obj = wait_for(done, timeout=TIMEOUT, what=f"ModelBooster {name} to converge")
    return found


@pytest.mark.parametrize("generation", ["v0.1", "v0.2", "v1.0"])
def test_converges_with_autoscaling_in_the_served_shape(
    generation: str, child_crds_of: Any, reconciling: Any, real_namespace: str, real_user: RealSession
) -> None:
    child_crds_of(generation)
    create_booster(real_user, _in(real_namespace, scaled()))
    create_booster(real_user, _in(real_namespace, plain()))
    with reconciling() as reconciler:
        for name in ("scaled", "plain"):
            _converged(real_user, real_namespace, name)
        if generation == "v1.0":
            policy = get_object(real_user, POLICIES, real_namespace, "scaled-a")
            assert policy is not None
            assert policy["spec"] == EXPECTED_SCALED["v1.0"]
            assert not custom(real_user).list_namespaced_custom_object(
                WORKLOAD, "v1alpha1", real_namespace, "autoscalingpolicies"
            )["items"][1:]
        else:
            binding = get_object(real_user, BINDINGS, real_namespace, "scaled-a")
            assert binding is not None
            assert binding["spec"] == EXPECTED_SCALED[generation]
        serving = get_object(real_user, SERVINGS, real_namespace, "plain-a")
        assert serving is not None
        assert ("topologySpreadConstraints" in serving["spec"]) is (generation == "v0.1")

        # Idle: nothing re-sent in a loop, the loss reported once per ModelBooster.
        def quiet_for_a_second() -> bool:
            before = writes(reconciler)
            time.sleep(1.0)
            return writes(reconciler) == before

        wait_for(quiet_for_a_second, timeout=TIMEOUT, what="the reconciler to stop writing")
        reported = _events(real_user, real_namespace, "FieldNotServed")
        if generation == "v0.1":
            assert reported == []
        else:
            assert sorted(e["involved_object"]["name"] for e in reported) == ["plain", "scaled"]
            assert all((e["count"] or 1) == 1 for e in reported)
        real_user.check_processes()


def test_the_binding_crd_appearing_and_disappearing_while_running(
    child_crds_of: Any, reconciling: Any, real_api: RealCluster, real_namespace: str, real_user: RealSession
) -> None:
    child_crds_of("v0.1", binding=False)
    create_booster(real_user, _in(real_namespace, scaled()))
    create_booster(real_user, _in(real_namespace, plain()))
    with reconciling() as reconciler, real_api.api_client() as api:
        failed = wait_condition(real_user, real_namespace, "scaled", "Failed", "True", timeout=TIMEOUT)
        found = condition(failed, "Failed")
        assert found is not None
        assert found["reason"] == "KindNotServed"
        assert BINDING_CRD in found["message"]
        _converged(real_user, real_namespace, "plain")
        assert get_object(real_user, SERVINGS, real_namespace, "scaled-a") is None  # nothing half-written

        started = time.monotonic()
        apply_crds(api, [binding_crd("v0.1")])
        _converged(real_user, real_namespace, "scaled")
        print(f"\nBinding CRD applied -> ModelBooster converged: {time.monotonic() - started:.2f}s")
        assert get_object(real_user, BINDINGS, real_namespace, "scaled-a") is not None

        delete_crds(api, [BINDING_CRD])

        def says_not_served() -> bool:
            obj = get_object(real_user, (WORKLOAD, "modelboosters"), real_namespace, "scaled")
            return (condition(obj, "Failed") or {}).get("reason") == "KindNotServed"

        wait_for(says_not_served, timeout=TIMEOUT, what="scaled to say KindNotServed again")
        plain_now = get_object(real_user, (WORKLOAD, "modelboosters"), real_namespace, "plain")
        assert (condition(plain_now, "Failed") or {}).get("status") == "False"
        reconciler.check()

        apply_crds(api, [binding_crd("v0.1")])  # replaced: back again
        _converged(real_user, real_namespace, "scaled")
        real_user.check_processes()
