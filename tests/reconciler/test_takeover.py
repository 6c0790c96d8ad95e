"""Taking over a running cluster restarts no inference pod (docs/design/reconciler.md §16), on the fake API server.

For each Kthena generation (v0.1.0, v0.2.0-v0.4.0 as v0.4.0, v1.0.0) its child CRDs are served and a ModelBooster
has the children that release's controller wrote (tests/takeover/kthena.py, written from the facts); for our
previous release, the children modelbooster 0.2.0 rendered (tests/takeover/rendered_0_2_0, captured before the
rendering changed). Then our reconciler starts:
- the ModelBooster goes Initialized, the ModelServing's pod-shaping spec and `metadata.generation` stay as they
  were, the older rendering is counted (condition UpToDate, metric), and full resyncs write nothing: resyncs every
  0.2 s for 2 s are ten passes over everything, more than any 60 s at the default period (600 s) makes;
- one change of the spec writes the pod template once, to the current rendering;
- a field someone adds to the template afterwards is removed.
The real-server counterpart is tests/realapi/test_takeover.py.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import pytest

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING, child_kind_of
from reconciler.modelbooster.rollout import pod_shaping
from reconciler.modelbooster.synthesis import synthesize
from reconciler.runtime.apply import is_subset
from reconciler.runtime.client import KubeClient
from shared.autoscaling_generations import Generation
from shared.rollout import ANNOTATION_ROLLOUT, ANNOTATION_TEMPLATE
from shared.validation import parse_modelbooster
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import FAST, NS, Cluster, RunningReconciler, eventually, overridden, quiet
from tests.reconciler.kthena_crds import child_crds, model_booster_crd
from tests.takeover import kthena

Obj = dict[str, Any]
KTHENA_MANAGER: Final = "kthena-controller-manager"
# (the cluster's child CRDs, who wrote the children, the ModelBooster of tests/takeover/boosters)
CASES: Final = {
    "Kthena v0.1.0": ("v0.1", "v0.1.0", "v01"),
    "Kthena v0.4.0": ("v0.2", "v0.4.0", "v04"),
    "Kthena v1.0.0": ("v1.0", "v1.0.0", "v1"),
    "modelbooster 0.2.0, list of backends": ("v0.1", "0.2.0", "v01"),
    "modelbooster 0.2.0, a replica range": ("v0.1", "0.2.0", "v04"),
    "modelbooster 0.2.0, a fixed count": ("v0.1", "0.2.0", "v1"),
}


@pytest.fixture
async def bare(fake_apiserver_inloop: FakeApiServer) -> FakeApiServer:
    fake_apiserver_inloop.register_crd(model_booster_crd())
    fake_apiserver_inloop.create_namespace(NS)
    return fake_apiserver_inloop


@pytest.fixture
async def cluster(bare: FakeApiServer) -> AsyncIterator[Cluster]:
    client = KubeClient.for_configuration(bare.aio_configuration(), user_agent="test-user")
    try:
        yield Cluster(bare, client)
    finally:
        await client.close()


@pytest.fixture
async def start(bare: FakeApiServer) -> AsyncIterator[Callable[..., Awaitable[RunningReconciler]]]:
    started: list[RunningReconciler] = []

    async def run(**overrides: Any) -> RunningReconciler:
        running = RunningReconciler(bare, overridden(FAST, **overrides), f"r{len(started) + 1}")
        started.append(running)
        return await running.start()

    yield run
    for running in started:
        await running.stop()


async def seed(bare: FakeApiServer, cluster: Cluster, case: str) -> tuple[Obj, str]:
    """The served child CRDs, the ModelBooster and the children its previous controller wrote; the ModelBooster
    and the name of its ModelServing."""
    crds, writer, name = CASES[case]
    for crd in child_crds(crds):
        bare.register_crd(copy.deepcopy(crd))
    written = kthena.booster(name, NS)
    created = cluster.create_booster(written)
    uid = created["metadata"]["uid"]
    if writer == "0.2.0":
        children = [c for c in kthena.rendered_0_2_0(name, uid=uid, namespace=NS) if c["kind"] != "ModelBooster"]
        manager = "modelbooster"
    else:  # from the object as Kthena's CRD stored it: without our CRD's defaults
        children = kthena.children({**written, "metadata": created["metadata"]}, generation=writer, uid=uid)
        manager = KTHENA_MANAGER
    for child in children:
        kind = child_kind_of(child)
        assert kind is not None
        await cluster.client.create(kind, child, field_manager=manager)
    serving = next(child["metadata"]["name"] for child in children if child["kind"] == "ModelServing")
    return created, serving


def current_rendering(cluster: Cluster, name: str, crds: str) -> Obj:
    """The ModelServing this version renders for the stored ModelBooster, in the served generation's shape."""
    stored = cluster.get(MODEL_BOOSTER, name)
    assert stored is not None
    typed = parse_modelbooster({key: value for key, value in stored.items() if key != "status"})
    generation = {"v0.1": Generation.V0_1, "v0.2": Generation.V0_2, "v1.0": Generation.V1_0}[crds]
    serving: Obj = next(o for o in synthesize(typed, generation=generation) if o["kind"] == "ModelServing")
    if crds != "v0.1":
        serving["spec"].pop("topologySpreadConstraints")  # not served: not written (reconciler.md §14)
    return serving


async def settled(cluster: Cluster, reconciler: RunningReconciler, name: str) -> None:
    def converged() -> bool:
        return cluster.condition(name, "Initialized") == "True" and cluster.condition(name, "Failed") == "False"

    await eventually(converged, message=f"{name} converged")
    controller = reconciler.manager.controllers[0]
    await eventually(lambda: len(controller.queue) == 0 and not controller.queue.processing())
    await quiet(0.2)


def serving_writes(reconciler: RunningReconciler) -> list[Any]:
    return [entry for entry in reconciler.writes() if entry.resource == "modelservings"]


@pytest.mark.parametrize("case", list(CASES))
async def test_taking_over_writes_no_pod_template_and_the_first_spec_change_rolls_once(
    case: str, bare: FakeApiServer, cluster: Cluster, start: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    crds, _, _ = CASES[case]
    created, serving_name = await seed(bare, cluster, case)
    name = created["metadata"]["name"]
    before = cluster.get(MODEL_SERVING, serving_name)
    assert before is not None

    reconciler = await start(resync_period=0.2)
    await settled(cluster, reconciler, name)
    after = cluster.get(MODEL_SERVING, serving_name)
    assert after is not None
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    [owner] = after["metadata"]["ownerReferences"]
    assert owner["uid"] == created["metadata"]["uid"]
    assert owner["controller"] is True
    assert ANNOTATION_TEMPLATE in after["metadata"]["annotations"]
    older = not is_subset(pod_shaping(current_rendering(cluster, name, crds)), pod_shaping(after))
    # Every earlier rendering is an older one, 0.2.0's too: this version leaves out Kthena's VLLM_USE_V1, which
    # vLLM 0.33.0 no longer knows (docs/design/synthesis.md §10). Kept as it runs all the same.
    assert older
    assert cluster.condition(name, "UpToDate") == ("False" if older else "True")
    assert reconciler.metric("modelbooster_servings_older_rendering", namespace=NS) == int(older)
    assert [e["reason"] for e in cluster.events("TakenOver")] == ["TakenOver"]
    assert len(serving_writes(reconciler)) == 1  # its metadata: ownership, labels, our annotations

    # Idle: ten full resyncs write nothing.
    bare.requests.clear()
    await quiet(2.0)
    assert reconciler.writes() == []

    # One change of what the pods are made of: one write of the pod template, to the current rendering.
    spec = copy.deepcopy((cluster.get(MODEL_BOOSTER, name) or {})["spec"])
    backend = spec["backends"][0] if "backends" in spec else spec["backend"]
    backend["workers"][0]["config"]["max-model-len"] = 8192
    await cluster.replace_spec(name, spec)
    await eventually(lambda: "8192" in str((cluster.get(MODEL_SERVING, serving_name) or {})["spec"]["template"]))
    await settled(cluster, reconciler, name)
    rolled = cluster.get(MODEL_SERVING, serving_name)
    assert rolled is not None
    assert rolled["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert is_subset(pod_shaping(current_rendering(cluster, name, crds)), pod_shaping(rolled))
    writes = serving_writes(reconciler)
    assert 1 <= len(writes) <= 2, writes  # the template, and the digest the server stored if it differs
    assert cluster.condition(name, "UpToDate") == "True"
    assert reconciler.metric("modelbooster_servings_older_rendering", namespace=NS) == 0

    # What someone adds to the template afterwards is removed: the digest says it is not what we wrote.
    bare.requests.clear()
    live = cluster.get(MODEL_SERVING, serving_name)
    assert live is not None
    template = copy.deepcopy(live["spec"]["template"])
    template["roles"][0]["entryTemplate"]["spec"]["hostNetwork"] = True
    await cluster.patch(MODEL_SERVING, serving_name, {"spec": {"template": template}}, manager="kubectl-patch")
    await eventually(lambda: cluster.events("ForeignFieldsRemoved"), message="removed")
    await settled(cluster, reconciler, name)
    cleaned = cluster.get(MODEL_SERVING, serving_name)
    assert cleaned is not None
    assert "hostNetwork" not in cleaned["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]
    assert is_subset(pod_shaping(current_rendering(cluster, name, crds)), pod_shaping(cleaned))


async def test_a_rollout_request_brings_a_taken_over_serving_to_the_current_rendering(
    bare: FakeApiServer, cluster: Cluster, start: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    created, serving_name = await seed(bare, cluster, "Kthena v0.4.0")
    name = created["metadata"]["name"]
    reconciler = await start()
    await settled(cluster, reconciler, name)
    assert cluster.condition(name, "UpToDate") == "False"
    message = cluster.conditions(name)["UpToDate"]["message"]
    assert f"1 of 1 ModelServing runs an older rendering than this version of modelbooster renders ({serving_name})" \
        in message  # fmt: skip
    assert f"modelbooster rollout {name} -n {NS}" in message
    generation = (cluster.get(MODEL_SERVING, serving_name) or {})["metadata"]["generation"]

    bare.requests.clear()
    await cluster.patch(MODEL_BOOSTER, name, {"metadata": {"annotations": {ANNOTATION_ROLLOUT: "10:00"}}})
    await eventually(lambda: cluster.condition(name, "UpToDate") == "True", message="rolled")
    await settled(cluster, reconciler, name)
    rolled = cluster.get(MODEL_SERVING, serving_name)
    assert rolled is not None
    assert rolled["metadata"]["generation"] == generation + 1
    assert is_subset(pod_shaping(current_rendering(cluster, name, "v0.2")), pod_shaping(rolled))
    assert reconciler.metric("modelbooster_servings_older_rendering", namespace=NS) == 0

    # Asking again changes nothing that runs: the ModelServing already has the current rendering.
    await cluster.patch(MODEL_BOOSTER, name, {"metadata": {"annotations": {ANNOTATION_ROLLOUT: "11:00"}}})
    await quiet(0.5)
    await settled(cluster, reconciler, name)
    assert (cluster.get(MODEL_SERVING, serving_name) or {})["metadata"]["generation"] == generation + 1


async def test_an_immutable_field_holds_the_change_back_and_says_so_without_a_retry_loop(
    bare: FakeApiServer, cluster: Cluster, start: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    """Kthena v1.0 rendered a worker without `replicas` with `minRoleReplicas: {leader: 0}`; we render 1, and the
    served CRD declares the field immutable. The takeover keeps it; a spec change that would roll it is held back,
    named in the Failed condition with both values, never retried, and nothing is deleted until the user does."""
    for crd in child_crds("v1.0"):
        bare.register_crd(copy.deepcopy(crd))
    written = kthena.booster("v1-worker-replicas-omitted", NS)
    created = cluster.create_booster(written)
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    for child in kthena.children({**written, "metadata": created["metadata"]}, generation="v1.0.0", uid=uid):
        kind = child_kind_of(child)
        assert kind is not None
        await cluster.client.create(kind, child, field_manager=KTHENA_MANAGER)
    serving_name = f"{name}-cpu"
    reconciler = await start(resync_period=0.2)
    await settled(cluster, reconciler, name)
    kept = cluster.get(MODEL_SERVING, serving_name)
    assert kept is not None
    assert kept["spec"]["template"]["gangPolicy"]["minRoleReplicas"] == {"leader": 0}

    spec = copy.deepcopy((cluster.get(MODEL_BOOSTER, name) or {})["spec"])
    spec["backend"]["workers"][0]["config"]["max-model-len"] = 8192
    await cluster.replace_spec(name, spec)
    await eventually(lambda: cluster.condition(name, "Failed") == "True", message="held back")
    failed = cluster.conditions(name)["Failed"]
    assert failed["reason"] == "ImmutableField"
    assert f"ModelServing {NS}/{serving_name} is kept as it runs" in failed["message"]
    assert 'spec.template.gangPolicy.minRoleReplicas is {"leader":0}, the ModelBooster now renders {"leader":1}' \
        in failed["message"]  # fmt: skip
    assert f"kubectl delete modelservings.workload.serving.volcano.sh -n {NS} {serving_name}" in failed["message"]
    assert cluster.condition(name, "Initialized") == "True"
    assert cluster.condition(name, "UpToDate") == "False"

    errors = reconciler.metric("controller_runtime_reconcile_errors_total", controller="modelbooster")
    bare.requests.clear()
    await quiet(1.0)  # five resyncs
    assert serving_writes(reconciler) == []
    assert reconciler.metric("controller_runtime_reconcile_errors_total", controller="modelbooster") == errors
    assert cluster.get(MODEL_SERVING, serving_name) == kept  # not written, not deleted

    # The user decides: the ModelServing deleted, it is created anew with the current rendering.
    await cluster.delete(MODEL_SERVING, serving_name)
    await eventually(lambda: cluster.condition(name, "Failed") == "False", message="recreated")
    recreated = cluster.get(MODEL_SERVING, serving_name)
    assert recreated is not None
    assert recreated["spec"]["template"]["gangPolicy"]["minRoleReplicas"] == {"leader": 1}
    assert cluster.condition(name, "UpToDate") == "True"


async def test_a_child_the_api_server_refuses_is_reported_and_not_retried(
    bare: FakeApiServer, cluster: Cluster, start: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    """A transition rule the reconciler cannot read as "immutable" refuses the roll with 422: Failed names the
    refusal, and it is not retried (only a change of the ModelBooster or of the child can make it pass)."""
    crds = child_crds("v1.0")
    serving_crd = next(crd for crd in crds if crd["spec"]["names"]["kind"] == "ModelServing")
    schema = serving_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    gang = schema["properties"]["spec"]["properties"]["template"]["properties"]["gangPolicy"]
    rules = gang["properties"]["minRoleReplicas"]["x-kubernetes-validations"]
    rules[0]["rule"] = "size(self) == size(oldSelf) && self == oldSelf"
    for crd in crds:
        bare.register_crd(copy.deepcopy(crd))
    written = kthena.booster("v1-worker-replicas-omitted", NS)
    created = cluster.create_booster(written)
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    for child in kthena.children({**written, "metadata": created["metadata"]}, generation="v1.0.0", uid=uid):
        kind = child_kind_of(child)
        assert kind is not None
        await cluster.client.create(kind, child, field_manager=KTHENA_MANAGER)
    reconciler = await start(resync_period=0)
    await settled(cluster, reconciler, name)

    spec = copy.deepcopy((cluster.get(MODEL_BOOSTER, name) or {})["spec"])
    spec["backend"]["workers"][0]["config"]["max-model-len"] = 8192
    await cluster.replace_spec(name, spec)
    await eventually(lambda: cluster.condition(name, "Failed") == "True", message="refused")
    failed = cluster.conditions(name)["Failed"]
    assert failed["reason"] == "ChildRefused"
    assert f"the API server refused ModelServing {NS}/{name}-cpu" in failed["message"]
    assert "not retried" in failed["message"]
    attempts = len(serving_writes(reconciler))
    await quiet(1.0)
    assert len(serving_writes(reconciler)) == attempts  # no retry loop
