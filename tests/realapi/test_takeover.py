"""Taking over a running cluster on a real kube-apiserver v1.36, restarting no inference pod
(docs/design/reconciler.md §16; docs/migrating-from-kthena.md).

For each Kthena generation — v0.1.0, v0.2.0-v0.4.0 (as v0.4.0), v1.0.0 — its ModelBooster CRD and child CRDs are
served (tests/reconciler/kthena_crds.py), a ModelBooster is stored under Kthena's CRD and its children are the
ones that release's controller writes (tests/takeover/kthena.py, field manager `kthena-controller-manager`).
Then, as the runbook says, our ModelBooster CRD replaces Kthena's, our webhook is registered and our reconciler
starts. For our previous release: our CRDs, and the children modelbooster 0.2.0 rendered
(tests/takeover/rendered_0_2_0), written by the field manager `modelbooster`.

Shown for each:
- the ModelBooster goes Initialized, the ModelServing's `spec` (so its template) and `metadata.generation` are
  unchanged, and the reconciler then writes nothing while idle. The window here is IDLE_SECONDS with a full
  resync every 2 s (five passes over everything; the default period is 600 s, so a 60 s idle at the default
  makes at most one); tests/reconciler/test_takeover.py runs the same logic for ten passes on the fake;
- one change of the spec writes the template exactly once (the ModelServing's generation moves by one), to the
  current rendering;
- a field someone adds to the template afterwards is removed.
Figures (generation and spec before/after, writes while idle) are printed with `-s`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from reconciler.modelbooster.rollout import pod_shaping
from reconciler.modelbooster.synthesis import synthesize
from reconciler.runtime.apply import is_subset
from shared.autoscaling_generations import Generation
from shared.validation import parse_modelbooster
from tests.e2e.harness import raw_request, wait_for
from tests.e2e.user import condition, get_object
from tests.realapi.controlplane import RealCluster
from tests.realapi.crds import apply_crds, chart_crds, delete_crds
from tests.realapi.reconciler import running_reconciler
from tests.realapi.session import RealSession
from tests.realapi.test_reconciler import writes
from tests.realapi.webhook import WebhookServer, register_webhook
from tests.reconciler.kthena_crds import child_crds, kthena_model_booster_crd
from tests.takeover import kthena

Obj = dict[str, Any]
WORKLOAD: Final = "workload.serving.volcano.sh"
BOOSTERS: Final = (WORKLOAD, "modelboosters")
SERVINGS: Final = (WORKLOAD, "modelservings")
PLURALS: Final = {
    "ModelServing": "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/{ns}/modelservings",
    "AutoscalingPolicy": "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/{ns}/autoscalingpolicies",
    "AutoscalingPolicyBinding": "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/{ns}/autoscalingpolicybindings",
    "ModelServer": "/apis/networking.serving.volcano.sh/v1alpha1/namespaces/{ns}/modelservers",
    "ModelRoute": "/apis/networking.serving.volcano.sh/v1alpha1/namespaces/{ns}/modelroutes",
}
BINDING_CRD: Final = f"autoscalingpolicybindings.{WORKLOAD}"
BOOSTER_CRD: Final = f"modelboosters.{WORKLOAD}"
TIMEOUT: Final = 30.0
IDLE_SECONDS: Final = 10.0
# (child CRDs served, who wrote the children, the ModelBooster of tests/takeover/boosters)
CASES: Final = {
    "Kthena v0.1.0": ("v0.1", "v0.1.0", "v01"),
    "Kthena v0.4.0": ("v0.2", "v0.4.0", "v04"),
    "Kthena v1.0.0": ("v1.0", "v1.0.0", "v1"),
    "modelbooster 0.2.0": ("v0.1", "0.2.0", "v04"),
}


@pytest.fixture
def kthena_crds(real_api: RealCluster, real_crds: list[Obj]) -> Iterator[Any]:
    """`kthena_crds(generation, release)`: Kthena's ModelBooster CRD of `release` (unless None) and the child CRDs
    of `generation` served in place of ours; the chart's come back afterwards."""
    with real_api.api_client() as api:

        def install(generation: str, release: str | None) -> None:
            crds = child_crds(generation)
            if release is not None:
                crds.append(kthena_model_booster_crd(release))
            apply_crds(api, crds)
            if not any(crd["metadata"]["name"] == BINDING_CRD for crd in crds):
                delete_crds(api, [BINDING_CRD])

        try:
            yield install
        finally:
            apply_crds(api, chart_crds())


def _rendering(session: RealSession, namespace: str, name: str, generation: str) -> Obj:
    """The ModelServing this version renders for the stored ModelBooster, as written in the served shape."""
    stored = get_object(session, BOOSTERS, namespace, name)
    assert stored is not None
    typed = parse_modelbooster({key: value for key, value in stored.items() if key != "status"})
    served = {"v0.1": Generation.V0_1, "v0.2": Generation.V0_2, "v1.0": Generation.V1_0}[generation]
    serving: Obj = next(o for o in synthesize(typed, generation=served) if o["kind"] == "ModelServing")
    if generation != "v0.1":
        serving["spec"].pop("topologySpreadConstraints")
    return serving


def _converged(session: RealSession, namespace: str, name: str) -> Obj:
    def done() -> Obj | None:
        session.check_processes()
        obj = get_object(session, BOOSTERS, namespace, name)
        initialized, failed = condition(obj, "Initialized"), condition(obj, "Failed")
        return obj if initialized and initialized["status"] == "True" and failed and failed["status"] == "False" \
            else None  # fmt: skip

    found: Obj = wait_for(done, timeout=TIMEOUT, what=f"ModelBooster {name} to converge")
    return found


def _serving(session: RealSession, namespace: str, name: str) -> Obj:
    found = get_object(session, SERVINGS, namespace, name)
    assert found is not None
    return found


@pytest.mark.parametrize("case", list(CASES))
def test_taking_over_restarts_no_pod(
    case: str,
    kthena_crds: Any,
    *,
    real_api: RealCluster,
    real_namespace: str,
    real_user: RealSession,
    real_webhook_server: WebhookServer,
    tmp_path: Path,
) -> None:
    generation, writer, booster_name = CASES[case]
    kthena_crds(generation, None if writer == "0.2.0" else writer)
    api = real_user.user
    written = kthena.booster(booster_name, real_namespace)
    created = raw_request(api, "POST", f"/apis/{WORKLOAD}/v1alpha1/namespaces/{real_namespace}/modelboosters",
                          body=written)  # fmt: skip
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    if writer == "0.2.0":
        children = [c for c in kthena.rendered_0_2_0(booster_name, uid=uid, namespace=real_namespace)
                    if c["kind"] != "ModelBooster"]  # fmt: skip
        manager = "modelbooster"
    else:
        children = kthena.children({**written, "metadata": created["metadata"]}, generation=writer, uid=uid)
        manager = "kthena-controller-manager"
    for child in children:
        path = PLURALS[child["kind"]].format(ns=real_namespace)
        raw_request(api, "POST", f"{path}?fieldManager={manager}", body=child)
    serving_name = next(c["metadata"]["name"] for c in children if c["kind"] == "ModelServing")
    before = _serving(real_user, real_namespace, serving_name)

    # The runbook's order: our ModelBooster CRD in place of Kthena's, our webhook, then our reconciler.
    apply_crds(api, [crd for crd in chart_crds() if crd["metadata"]["name"] == BOOSTER_CRD])
    registration = register_webhook(api, real_webhook_server, namespace=real_namespace)
    try:
        with running_reconciler(real_api, namespace=real_namespace, workdir=tmp_path,
                                flags={"--resync-period": "2"}) as reconciler:  # fmt: skip
            real_user.processes.append(reconciler.process)
            booster = _converged(real_user, real_namespace, name)
            after = _serving(real_user, real_namespace, serving_name)
            print(f"\n{case}: generation {before['metadata']['generation']} -> {after['metadata']['generation']}, "
                  f"spec unchanged: {after['spec'] == before['spec']}, UpToDate: "
                  f"{(condition(booster, 'UpToDate') or {}).get('status')}")  # fmt: skip
            assert after["spec"] == before["spec"]
            assert after["metadata"]["generation"] == before["metadata"]["generation"]
            [owner] = after["metadata"]["ownerReferences"]
            assert owner["uid"] == uid
            assert owner["controller"] is True

            def quiet_for_a_second() -> bool:
                mark = writes(reconciler)
                time.sleep(1.0)
                return writes(reconciler) == mark

            wait_for(quiet_for_a_second, timeout=TIMEOUT, what="the reconciler to finish its takeover writes")
            mark = writes(reconciler)
            time.sleep(IDLE_SECONDS)
            idle = writes(reconciler) - mark
            print(f"{case}: writes in {IDLE_SECONDS:.0f} s idle with a full resync every 2 s: {idle:.0f}")
            assert idle == 0
            assert _serving(real_user, real_namespace, serving_name)["metadata"]["resourceVersion"] == \
                after["metadata"]["resourceVersion"]  # fmt: skip

            # One change of the spec: one write of the template, to the current rendering.
            stored = get_object(real_user, BOOSTERS, real_namespace, name)
            assert stored is not None
            spec = copy.deepcopy(stored["spec"])
            backend = spec["backends"][0] if "backends" in spec else spec["backend"]
            backend["workers"][0]["config"]["max-model-len"] = 8192
            raw_request(api, "PUT", f"/apis/{WORKLOAD}/v1alpha1/namespaces/{real_namespace}/modelboosters/{name}",
                        body={**stored, "spec": spec})  # fmt: skip
            wait_for(lambda: "8192" in str(_serving(real_user, real_namespace, serving_name)["spec"]["template"]),
                     timeout=TIMEOUT, what="the change to reach the template")  # fmt: skip
            wait_for(quiet_for_a_second, timeout=TIMEOUT, what="the reconciler to settle")
            rolled = _serving(real_user, real_namespace, serving_name)
            print(f"{case}: after one spec change, generation {rolled['metadata']['generation']}")
            assert rolled["metadata"]["generation"] == before["metadata"]["generation"] + 1
            expected = _rendering(real_user, real_namespace, name, generation)
            assert is_subset(pod_shaping(expected), pod_shaping(rolled))
            booster = _converged(real_user, real_namespace, name)
            assert (condition(booster, "UpToDate") or {}).get("status") == "True"

            # A field someone adds to the template is removed.
            template = copy.deepcopy(rolled["spec"]["template"])
            template["roles"][0]["entryTemplate"]["spec"]["hostNetwork"] = True
            raw_request(api, "PATCH", f"{PLURALS['ModelServing'].format(ns=real_namespace)}/{serving_name}"
                        "?fieldManager=kubectl-patch", body={"spec": {"template": template}},
                        content_type="application/merge-patch+json")  # fmt: skip

            def cleaned() -> bool:
                serving = _serving(real_user, real_namespace, serving_name)
                entry = serving["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]
                return "hostNetwork" not in entry and is_subset(pod_shaping(expected), pod_shaping(serving))

            wait_for(cleaned, timeout=TIMEOUT, what="the foreign field to be removed")
            real_user.check_processes()
    finally:
        registration.remove(api)


def test_an_immutable_field_is_held_back_not_retried(
    kthena_crds: Any,
    *,
    real_api: RealCluster,
    real_namespace: str,
    real_user: RealSession,
    real_webhook_server: WebhookServer,
    tmp_path: Path,
) -> None:
    """Kthena v1.0 rendered a worker without `replicas` with `minRoleReplicas: {leader: 0}`, which its CRD (CEL
    `self == oldSelf`) never lets change; we render 1. The takeover completes (Initialized) without touching it;
    a spec change that would roll it is reported (Failed/ImmutableField, both values) and not retried."""
    kthena_crds("v1.0", "v1.0.0")
    api = real_user.user
    written = kthena.booster("v1-worker-replicas-omitted", real_namespace)
    created = raw_request(api, "POST", f"/apis/{WORKLOAD}/v1alpha1/namespaces/{real_namespace}/modelboosters",
                          body=written)  # fmt: skip
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    for child in kthena.children({**written, "metadata": created["metadata"]}, generation="v1.0.0", uid=uid):
        path = PLURALS[child["kind"]].format(ns=real_namespace)
        raw_request(api, "POST", f"{path}?fieldManager=kthena-controller-manager", body=child)
    serving_name = f"{name}-cpu"
    before = _serving(real_user, real_namespace, serving_name)
    apply_crds(api, [crd for crd in chart_crds() if crd["metadata"]["name"] == BOOSTER_CRD])
    registration = register_webhook(api, real_webhook_server, namespace=real_namespace)
    try:
        with running_reconciler(real_api, namespace=real_namespace, workdir=tmp_path) as reconciler:
            real_user.processes.append(reconciler.process)
            _converged(real_user, real_namespace, name)
            kept = _serving(real_user, real_namespace, serving_name)
            assert kept["spec"] == before["spec"]
            assert kept["spec"]["template"]["gangPolicy"]["minRoleReplicas"] == {"leader": 0}

            stored = get_object(real_user, BOOSTERS, real_namespace, name)
            assert stored is not None
            spec = copy.deepcopy(stored["spec"])
            spec["backend"]["workers"][0]["config"]["max-model-len"] = 8192
            raw_request(api, "PUT", f"/apis/{WORKLOAD}/v1alpha1/namespaces/{real_namespace}/modelboosters/{name}",
                        body={**stored, "spec": spec})  # fmt: skip

            def held_back() -> Obj | None:
                failed = condition(get_object(real_user, BOOSTERS, real_namespace, name), "Failed")
                return failed if failed and failed["reason"] == "ImmutableField" else None

            failed = wait_for(held_back, timeout=TIMEOUT, what="the change to be held back")
            assert 'spec.template.gangPolicy.minRoleReplicas is {"leader":0}, the ModelBooster now renders ' \
                '{"leader":1}' in failed["message"]  # fmt: skip
            mark = writes(reconciler)
            time.sleep(3.0)
            assert writes(reconciler) == mark  # no retry loop
            assert _serving(real_user, real_namespace, serving_name)["metadata"]["resourceVersion"] == \
                kept["metadata"]["resourceVersion"]  # fmt: skip
            real_user.check_processes()
    finally:
        registration.remove(api)
