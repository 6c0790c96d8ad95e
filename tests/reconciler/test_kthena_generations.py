"""The reconciler in clusters that keep Kthena's own child CRDs, of each generation (tests/reconciler/kthena_crds.py).

Expected objects are written here from the facts of each generation (docs/design/kthena-generations.md), not
produced by the code under test.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from reconciler.modelbooster.kinds import (
    AUTOSCALING_POLICY,
    AUTOSCALING_POLICY_BINDING,
    MODEL_BOOSTER,
    MODEL_SERVING,
)
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.runtime.client import KubeClient
from reconciler.runtime.discovery import CRD
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import (
    FAST,
    NS,
    Cluster,
    RunningReconciler,
    backend,
    booster,
    child_writes,
    eventually,
    quiet,
)
from tests.reconciler.kthena_crds import GENERATIONS, binding_crd, child_crds, model_booster_crd
from tests.reconciler.test_role_replicas import converged, pd_booster, roles, scale_role

METRIC = "kthena:num_requests_waiting"
POLICY = {"metrics": [{"metricName": METRIC, "targetValue": 10}]}
LEADER = {"modelserving.volcano.sh/role": "leader"}
SPREAD = "spec.topologySpreadConstraints"


def scaled() -> dict[str, Any]:
    """One backend with its own autoscaling policy."""
    return booster("scaled", backend("a", minReplicas=1, maxReplicas=3, autoscalingPolicy=POLICY))


def pool() -> dict[str, Any]:
    """Two backends scaled together by cost (model-level policy)."""
    backends = [backend(name, minReplicas=1, maxReplicas=4, scalingCost=cost) for name, cost in (("a", 10), ("b", 20))]
    return booster("pool", *backends, autoscalingPolicy=POLICY, costExpansionRatePercent=150)


def plain() -> dict[str, Any]:
    return booster("plain", backend("a"))


def _ref(name: str) -> dict[str, Any]:
    return {"kind": "ModelServing", "name": name}


EXPECTED_SCALED = {
    "v0.1": {
        "policyRef": {"name": "scaled-a"},
        "scalingConfiguration": {
            "target": {
                "targetRef": _ref("scaled-a"),
                "additionalMatchLabels": LEADER,
                "metricEndpoint": {"uri": "/metrics", "port": 8100},
            },
            "minReplicas": 1,
            "maxReplicas": 3,
        },
    },
    "v0.2": {
        "policyRef": {"name": "scaled-a"},
        "homogeneousTarget": {
            "target": {
                "targetRef": _ref("scaled-a"),
                "metricEndpoint": {"uri": "/metrics", "port": 8100, "labelSelector": {"matchLabels": LEADER}},
            },
            "minReplicas": 1,
            "maxReplicas": 3,
        },
    },
    "v1.0": {
        "tolerancePercent": 10,
        "metrics": [{"name": METRIC, "targetValue": 10}],
        "homogeneousTarget": {
            "target": {
                "targetRef": _ref("scaled-a"),
                "metricSources": {
                    METRIC: {
                        "pod": {
                            "name": METRIC,
                            "uri": "/metrics",
                            "port": 8100,
                            "labelSelector": {"matchLabels": LEADER},
                        }
                    }
                },
            },
            "minReplicas": 1,
            "maxReplicas": 3,
        },
    },
}


def _v1_param(name: str, cost: int) -> dict[str, Any]:
    source = {"pod": {"name": METRIC, "uri": "/metrics", "port": 8100, "labelSelector": {"matchLabels": LEADER}}}
    return {
        "target": {"targetRef": _ref(name), "metricSources": {METRIC: source}},
        "cost": cost,
        "minReplicas": 1,
        "maxReplicas": 4,
    }


EXPECTED_POOL = {
    "v0.1": {
        "policyRef": {"name": "pool"},
        "optimizerConfiguration": {
            "costExpansionRatePercent": 150,
            "params": [
                {
                    "target": {
                        "targetRef": _ref(f"pool-{name}"),
                        "additionalMatchLabels": LEADER,
                        "metricEndpoint": {"uri": "/metrics", "port": 8100},
                    },
                    "cost": cost,
                    "minReplicas": 1,
                    "maxReplicas": 4,
                }
                for name, cost in (("a", 10), ("b", 20))
            ],
        },
    },
    "v0.2": {
        "policyRef": {"name": "pool"},
        "heterogeneousTarget": {
            "params": [
                {
                    "target": {
                        "targetRef": _ref(f"pool-{name}"),
                        "metricEndpoint": {"uri": "/metrics", "port": 8100, "labelSelector": {"matchLabels": LEADER}},
                    },
                    "cost": cost,
                    "minReplicas": 1,
                    "maxReplicas": 4,
                }
                for name, cost in (("a", 10), ("b", 20))
            ],
            "costExpansionRatePercent": 150,
        },
    },
    "v1.0": {
        "tolerancePercent": 10,
        "metrics": [{"name": METRIC, "targetValue": 10}],
        "heterogeneousTarget": {
            "params": [_v1_param("pool-a", 10), _v1_param("pool-b", 20)],
            "costExpansionRatePercent": 150,
        },
    },
}


@pytest.fixture
async def bare(fake_apiserver_inloop: FakeApiServer) -> FakeApiServer:
    """The fake with our ModelBooster CRD and namespace `ns`; child CRDs are up to each test."""
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
async def start(bare: FakeApiServer) -> AsyncIterator[Callable[[], Awaitable[RunningReconciler]]]:
    started: list[RunningReconciler] = []

    async def run() -> RunningReconciler:
        running = RunningReconciler(bare, FAST, "r1")
        started.append(running)
        return await running.start()

    yield run
    for running in started:
        await running.stop()


def _install(fake: FakeApiServer, crds: list[dict[str, Any]]) -> None:
    for crd in crds:
        fake.register_crd(copy.deepcopy(crd))


async def _converged(cluster: Cluster, *names: str) -> None:
    for name in names:

        def converged(name: str = name) -> bool:
            return cluster.condition(name, "Initialized") == "True" and cluster.condition(name, "Failed") == "False"

        await eventually(converged, message=name)


@pytest.mark.parametrize("generation", ["v0.1", "v0.2", "v1.0"])
async def test_boosters_converge_with_autoscaling_in_the_served_shape(
    generation: str, bare: FakeApiServer, cluster: Cluster, start: Callable[[], Awaitable[RunningReconciler]]
) -> None:
    _install(bare, child_crds(generation))
    reconciler = await start()
    for obj in (scaled(), pool(), plain()):
        cluster.create_booster(obj)
    await _converged(cluster, "scaled", "pool", "plain")

    if generation == "v1.0":
        assert cluster.names(AUTOSCALING_POLICY) == ["pool", "scaled-a"]
        policy = cluster.get(AUTOSCALING_POLICY, "scaled-a")
        assert policy is not None
        assert policy["spec"] == EXPECTED_SCALED["v1.0"]
        pooled = cluster.get(AUTOSCALING_POLICY, "pool")
        assert pooled is not None
        assert pooled["spec"] == EXPECTED_POOL["v1.0"]
    else:
        assert cluster.names(AUTOSCALING_POLICY_BINDING) == ["pool", "scaled-a"]
        for name, expected in (("scaled-a", EXPECTED_SCALED), ("pool", EXPECTED_POOL)):
            binding = cluster.get(AUTOSCALING_POLICY_BINDING, name)
            assert binding is not None
            assert binding["spec"] == expected[generation], name
        policy = cluster.get(AUTOSCALING_POLICY, "scaled-a")
        assert policy is not None
        assert policy["spec"]["metrics"] == [{"metricName": METRIC, "targetValue": 10}]
    # Same names, labels and owner as in every generation.
    policy = cluster.get(AUTOSCALING_POLICY, "scaled-a")
    assert policy is not None
    assert policy["metadata"]["labels"]["workload.serving.volcano.sh/model-name"] == "scaled"
    [owner] = policy["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("ModelBooster", "scaled", True)

    serving = cluster.get(MODEL_SERVING, "plain-a")
    assert serving is not None
    assert ("topologySpreadConstraints" in serving["spec"]) is (generation == "v0.1")

    # Converged means quiet: another pass over every ModelBooster writes no child.
    before = child_writes(reconciler)
    reconciler.process.registered_by(MODELBOOSTER).controller.enqueue_all()
    await quiet(0.5)
    assert child_writes(reconciler) == before


@pytest.mark.parametrize("generation", ["v0.2", "v1.0"])
async def test_a_field_the_served_schema_prunes_is_reported_once_per_booster_and_not_resent(
    generation: str, bare: FakeApiServer, cluster: Cluster, start: Callable[[], Awaitable[RunningReconciler]]
) -> None:
    _install(bare, child_crds(generation))
    reconciler = await start()
    cluster.create_booster(pool())
    cluster.create_booster(plain())
    await _converged(cluster, "pool", "plain")
    await eventually(lambda: len(cluster.events("FieldNotServed")) == 2)
    for _ in range(3):
        reconciler.process.registered_by(MODELBOOSTER).controller.enqueue_all()
        await quiet(0.2)
    events = cluster.events("FieldNotServed")
    assert sorted(e["involvedObject"]["name"] for e in events) == ["plain", "pool"]
    assert all(e.get("count", 1) == 1 for e in events)
    assert all(e["type"] == "Warning" for e in events)
    message = next(e["message"] for e in events if e["involvedObject"]["name"] == "plain")
    assert message == (
        f"ModelServing plain-a: {SPREAD} is not in the served CRD modelservings.workload.serving.volcano.sh, "
        "which would drop it; it is not written"
    )
    assert reconciler.metric("modelbooster_fields_not_served_total", kind="ModelServing", field=SPREAD) == 2
    # Never re-sent: each ModelServing was written once, by its create.
    servings = [w for w in child_writes(reconciler) if w[1] == "modelservings"]
    assert sorted(servings) == [("create", "modelservings", n) for n in ("plain-a", "pool-a", "pool-b")]


async def test_the_binding_kind_absent_at_start_installed_later_and_removed(
    bare: FakeApiServer, cluster: Cluster, start: Callable[[], Awaitable[RunningReconciler]]
) -> None:
    _install(bare, child_crds("v0.1", binding=False))
    reconciler = await start()
    await eventually(reconciler.manager.ready)  # nothing waits on the kind that is not served
    cluster.create_booster(scaled())
    cluster.create_booster(plain())

    # The ModelBooster that needs a Binding fails with a reason of its own; nothing of it is written.
    await eventually(lambda: cluster.condition("scaled", "Failed") == "True")
    failed = cluster.conditions("scaled")["Failed"]
    assert failed["reason"] == "KindNotServed"
    assert failed["message"] == (
        "the cluster does not serve AutoscalingPolicyBinding (workload.serving.volcano.sh/v1alpha1, "
        "CRD autoscalingpolicybindings.workload.serving.volcano.sh); install that CRD, ours (kubectl apply "
        "--server-side -f charts/modelbooster/charts/child-crds/crds/"
        "workload.serving.volcano.sh_autoscalingpolicybindings.yaml) or Kthena's own"
    )
    await _converged(cluster, "plain")  # every other ModelBooster reconciles normally
    assert not [w for w in child_writes(reconciler) if w[2].startswith("scaled")]
    await eventually(lambda: cluster.events("KindNotServed"), message="KindNotServed event")
    assert reconciler.metric("modelbooster_child_kind_served", kind="AutoscalingPolicyBinding") == 0
    assert reconciler.metric("modelbooster_autoscaling_generation", generation="none") == 1
    # No informer retrying a kind that is not served.
    assert not bare.requests.matching(resource="autoscalingpolicybindings")

    # Installed later: picked up without a restart; the ModelBooster converges by itself.
    bare.register_crd(binding_crd("v0.1"))
    await _converged(cluster, "scaled")
    assert cluster.names(AUTOSCALING_POLICY_BINDING) == ["scaled-a"]
    assert reconciler.metric("modelbooster_child_kind_served", kind="AutoscalingPolicyBinding") == 1
    assert reconciler.metric("modelbooster_autoscaling_generation", generation="v0.1") == 1

    # Removed: its informer stops cleanly, the ModelBooster says what is missing, the others are untouched.
    await cluster.client.delete(CRD, None, "autoscalingpolicybindings.workload.serving.volcano.sh")
    await eventually(lambda: cluster.condition("scaled", "Failed") == "True")
    assert cluster.conditions("scaled")["Failed"]["reason"] == "KindNotServed"
    assert cluster.condition("plain", "Failed") == "False"
    assert reconciler.manager.ready()
    assert reconciler.manager.healthy()
    bindings = len(bare.requests.matching(resource="autoscalingpolicybindings"))
    await quiet(0.5)
    assert len(bare.requests.matching(resource="autoscalingpolicybindings")) == bindings

    # And back again (a CRD replaced): converges once more.
    bare.register_crd(binding_crd("v0.1"))
    await _converged(cluster, "scaled")


async def test_a_cluster_without_any_child_crd_blocks_nothing(
    bare: FakeApiServer, cluster: Cluster, start: Callable[[], Awaitable[RunningReconciler]]
) -> None:
    reconciler = await start()
    await eventually(reconciler.manager.ready)
    cluster.create_booster(plain())
    await eventually(lambda: cluster.condition("plain", "Failed") == "True")
    assert cluster.conditions("plain")["Failed"]["reason"] == "KindNotServed"
    _install(bare, child_crds("v1.0"))
    await _converged(cluster, "plain")


async def test_child_crds_upgraded_in_place_rewrite_the_autoscaling_objects_in_the_new_shape(
    bare: FakeApiServer, cluster: Cluster, start: Callable[[], Awaitable[RunningReconciler]]
) -> None:
    """Kthena's CRDs upgraded from v0.1.0's to v0.2.0's while the reconciler runs (`kubectl apply` of the new
    files): the same Binding is rewritten in the new shape, and the ModelServing loses its topology spread."""
    _install(bare, child_crds("v0.1"))
    reconciler = await start()
    cluster.create_booster(scaled())
    await _converged(cluster, "scaled")
    old = cluster.get(AUTOSCALING_POLICY_BINDING, "scaled-a")
    assert old is not None
    assert old["spec"] == EXPECTED_SCALED["v0.1"]

    for crd in child_crds("v0.2"):
        live = cluster.fake.get("apiextensions.k8s.io/v1", "customresourcedefinitions", crd["metadata"]["name"])
        assert live is not None
        await cluster.client.replace(CRD, {**live, "spec": crd["spec"]})

    def rewritten() -> bool:
        binding = cluster.get(AUTOSCALING_POLICY_BINDING, "scaled-a")
        return binding is not None and binding["spec"] == EXPECTED_SCALED["v0.2"]

    await eventually(rewritten)
    binding = cluster.get(AUTOSCALING_POLICY_BINDING, "scaled-a")
    assert binding is not None
    assert binding["metadata"]["uid"] == old["metadata"]["uid"]  # the same object, updated
    await eventually(lambda: reconciler.metric("modelbooster_autoscaling_generation", generation="v0.2") == 1)
    await eventually(lambda: len(cluster.events("FieldNotServed")) == 1)
    assert cluster.condition("scaled", "Failed") == "False"


@pytest.mark.parametrize("generation", ["v0.2", "v1.0"])
async def test_drift_is_corrected_and_stale_autoscaling_pruned_in_a_foreign_shape(
    generation: str, bare: FakeApiServer, cluster: Cluster, start: Callable[[], Awaitable[RunningReconciler]]
) -> None:
    _install(bare, child_crds(generation))
    await start()
    cluster.create_booster(scaled())
    await _converged(cluster, "scaled")
    kind = AUTOSCALING_POLICY if generation == "v1.0" else AUTOSCALING_POLICY_BINDING
    await cluster.patch(kind, "scaled-a", {"spec": {"homogeneousTarget": {"maxReplicas": 9}}}, manager="someone")

    def restored() -> bool:
        obj = cluster.get(kind, "scaled-a")
        return obj is not None and obj["spec"]["homogeneousTarget"]["maxReplicas"] == 3

    await eventually(restored)
    live = cluster.get(kind, "scaled-a")
    assert live is not None
    expected = EXPECTED_SCALED[generation]
    assert live["spec"] == expected

    # Autoscaling removed: its objects go, in whatever shape they were.
    spec = scaled()["spec"]
    del spec["backends"][0]["autoscalingPolicy"]
    spec["backends"][0]["maxReplicas"] = 1
    await cluster.replace_spec("scaled", spec)
    await eventually(lambda: cluster.names(AUTOSCALING_POLICY) == [])
    if generation != "v1.0":
        assert cluster.names(AUTOSCALING_POLICY_BINDING) == []
    await _converged(cluster, "scaled")


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_role_replicas_scaled_from_outside_stay_in_every_generations_serving(
    generation: str, bare: FakeApiServer, cluster: Cluster, start: Callable[[], Awaitable[RunningReconciler]]
) -> None:
    # Kthena's ModelServing shapes keep `spec.template.roles` a plain (atomic) list: the scaler's role replicas
    # must survive the reconciler's apply there too (docs/design/inferno.md §19).
    _install(bare, child_crds(generation))
    reconciler = await start()
    cluster.create_booster(pd_booster(opt_in=True))
    await converged(cluster, reconciler)
    assert roles(cluster) == {"prefill": 1, "decode": 1}
    await scale_role(cluster, "prefill", 3)
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "ml"}}})
    await converged(cluster, reconciler)
    assert roles(cluster) == {"prefill": 3, "decode": 1}
    assert cluster.condition("m", "Failed") == "False"
