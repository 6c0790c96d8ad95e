"""What a Server's `targetRef` resolves to, and when Scale actuation must keep off it, against the fake API server
(reconciler/inferno/targets.py, consent.py, rivals.py; docs/design/inferno.md §13, §18): known kinds, kinds found
by discovery (and found later, once a negative answer expires); consent — on the target, or on the ModelBooster
that controls a ModelServing — and the bounds that come with it; targets another controller or scaler drives
(an HPA, a KEDA ScaledObject, an AutoscalingPolicyBinding, a Deployment owning a ReplicaSet, a second Server),
each refused naming the other party."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.inferno.consent import ScalingGate
from reconciler.inferno.kinds import DEPLOYMENT, MODEL_SERVER, MODEL_SERVING, REPLICA_SET
from reconciler.inferno.rivals import Rivals
from reconciler.inferno.targets import NEGATIVE_DISCOVERY_TTL, Bounds, TargetProblem, Targets
from reconciler.modelbooster.kinds import AUTOSCALING_POLICY_BINDING, MODEL_BOOSTER
from reconciler.runtime.client import KubeClient
from reconciler.runtime.kinds import Kind
from shared.api.inferno import TargetRef
from shared.engines.sglang.series import SGLANG
from shared.engines.vllm.series import VLLM
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS
from shared.scaling_consent import ANNOTATION_SCALED_BY
from tests.apiserver.widgets import WIDGET_CRD
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, backend, booster

ROOT = Path(__file__).resolve().parents[2]
CAPACITY_CRD = ROOT / "charts/modelbooster/charts/inferno-crds/crds/inferno.platform.ai_capacities.yaml"
ROLE = {"name": "leader", "replicas": 1, "workerReplicas": 0, "entryTemplate": {"spec": {"containers": []}}}
# KEDA's ScaledObject, as far as the reconciler reads it.
_OPEN_SCHEMA = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
SCALED_OBJECT_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "scaledobjects.keda.sh"},
    "spec": {
        "group": "keda.sh",
        "names": {
            "kind": "ScaledObject",
            "plural": "scaledobjects",
            "singular": "scaledobject",
            "listKind": "ScaledObjectList",
        },
        "scope": "Namespaced",
        "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": _OPEN_SCHEMA}],
    },
}


def serving(name: str, *, owner: dict[str, Any] | None = None, backend_name: str = "a",
            annotations: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"workload.serving.volcano.sh/backend-name":
                                                                          backend_name}}  # fmt: skip
    if annotations:
        metadata["annotations"] = annotations
    if owner is not None:
        meta = owner["metadata"]
        metadata["ownerReferences"] = [{"apiVersion": MODEL_BOOSTER.api_version, "kind": "ModelBooster",
                                        "name": meta["name"], "uid": meta["uid"], "controller": True}]  # fmt: skip
    return {"apiVersion": MODEL_SERVING.api_version, "kind": "ModelServing", "metadata": metadata,
            "spec": {"replicas": 1, "schedulerName": "volcano", "template": {"roles": [ROLE]}}}  # fmt: skip


def workload(kind: Kind, name: str, *, consent: str | None = None, owner: dict[str, Any] | None = None,
             replicas: int = 3) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {"name": name, "namespace": NS}
    if consent is not None:
        metadata["annotations"] = {ANNOTATION_SCALED_BY: consent}
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                        "controller": True}]  # fmt: skip
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, "spec": spec}


def hpa(name: str, target: str, *, api_version: str = "apps/v1", kind: str = "Deployment") -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target},
                     "minReplicas": 3, "maxReplicas": 10}}  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def targets(fake: FakeApiServer, clock: Clock) -> AsyncIterator[Targets]:
    fake.register_crd(yaml.safe_load(CAPACITY_CRD.read_text()))
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="test")
    try:
        yield Targets(client, field_manager="test", clock=clock)
    finally:
        await client.close()


@pytest.fixture
def gate(targets: Targets) -> ScalingGate:
    return ScalingGate(targets, Rivals(targets.client))


async def _problem(call: Any) -> TargetProblem:
    with pytest.raises(TargetProblem) as caught:
        await call
    return caught.value


async def _admit(gate: ScalingGate, kind: Kind, name: str, *, server: str = "a", server_max: int | None = 10,
                 rivals: Collection[str] = ()) -> Bounds:  # fmt: skip
    gate.new_run()
    return await gate.admit(kind, NS, name, server=server, server_min=None, server_max=server_max,
                            rival_servers=rivals)  # fmt: skip


# --- kinds -----------------------------------------------------------------------------------------------


async def test_kinds_known_found_by_discovery_or_refused(targets: Targets) -> None:
    assert await targets.kind_of(TargetRef(kind="ModelServing", name="x")) == MODEL_SERVING
    deployment = await targets.kind_of(TargetRef(kind="Deployment", name="x"))
    assert (deployment.api_version, deployment.plural) == ("apps/v1", "deployments")
    # Discovery: the ModelServing CRD under its own apiVersion spelled out is the known kind; a kind served
    # without /scale, or not served at all, is refused with the reason.
    assert await targets.kind_of(
        TargetRef(apiVersion="workload.serving.volcano.sh/v1alpha1", kind="ModelServing", name="x")
    ) == MODEL_SERVING
    capacity = await _problem(targets.kind_of(TargetRef(apiVersion="inferno.platform.ai/v1alpha1", kind="Capacity",
                                                        name="x")))  # fmt: skip
    assert (capacity.reason, capacity.message) == (
        "UnknownTargetKind", "Capacity (inferno.platform.ai/v1alpha1) has no scale subresource"
    )
    missing = await _problem(targets.kind_of(TargetRef(apiVersion="inferno.platform.ai/v1alpha1", kind="Nope",
                                                       name="x")))  # fmt: skip
    assert missing.message == "inferno.platform.ai/v1alpha1 serves no kind 'Nope'"
    unnamed = await _problem(targets.kind_of(TargetRef(kind="Rollout", name="x")))
    assert "give targetRef.apiVersion" in unnamed.message


async def test_a_kind_installed_after_a_failed_discovery_is_found_once_the_answer_expires(
    fake: FakeApiServer, targets: Targets, clock: Clock
) -> None:
    ref = TargetRef(apiVersion="example.fakeapi.io/v1", kind="Widget", name="w")
    first = await _problem(targets.kind_of(ref))
    assert "API discovery of example.fakeapi.io/v1 failed" in first.message
    crd = copy.deepcopy(WIDGET_CRD)
    for version in crd["spec"]["versions"]:
        version["subresources"] = {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                           "statusReplicasPath": ".status.replicas"}}  # fmt: skip
    fake.register_crd(crd)
    clock.now += NEGATIVE_DISCOVERY_TTL / 2
    await _problem(targets.kind_of(ref))  # still the remembered answer
    clock.now += NEGATIVE_DISCOVERY_TTL
    found = await targets.kind_of(ref)
    assert (found.group, found.plural) == ("example.fakeapi.io", "widgets")


# --- a ModelBooster's backend ---------------------------------------------------------------------------


async def test_a_model_booster_backend_needs_the_opt_in_and_consent_and_keeps_its_bounds(
    fake: FakeApiServer, gate: ScalingGate
) -> None:
    fixed = booster("fixed", backend("a", minReplicas=2, maxReplicas=2))
    stored_fixed = fake.create(copy.deepcopy(fixed))
    fake.create(serving("fixed-a", owner=stored_fixed))
    refused = await _problem(_admit(gate, MODEL_SERVING, "fixed-a", server_max=None))
    assert refused.reason == "ExternalScalingNotEnabled"
    assert ANNOTATION_EXTERNAL_REPLICAS in refused.message

    opted = booster("m", backend("a", minReplicas=1, maxReplicas=6))
    opted["metadata"]["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true"}
    stored = fake.create(copy.deepcopy(opted))
    fake.create(serving("m-a", owner=stored))
    # Opted in, but naming no Server: whoever may write Servers cannot scale the backend.
    unnamed = await _problem(_admit(gate, MODEL_SERVING, "m-a", server="grab"))
    assert (unnamed.reason, unnamed.message) == (
        "ConsentMissing",
        "ModelServing m-a is a backend of ModelBooster m, which names no Server that may scale it; annotate "
        f'ModelBooster m {ANNOTATION_SCALED_BY}: "grab" to let Server grab scale it',
    )
    # The ModelServing's own annotation does not count: the ModelBooster controls it.
    await gate.targets.client.patch(MODEL_SERVING, NS, "m-a",
                                    {"metadata": {"annotations": {ANNOTATION_SCALED_BY: "grab"}}})  # fmt: skip
    assert (await _problem(_admit(gate, MODEL_SERVING, "m-a", server="grab"))).reason == "ConsentMissing"

    await gate.targets.client.patch(MODEL_BOOSTER, NS, "m",
                                    {"metadata": {"annotations": {ANNOTATION_SCALED_BY: "a"}}})  # fmt: skip
    other = await _problem(_admit(gate, MODEL_SERVING, "m-a", server="grab"))
    assert "lets only Server a scale it, not grab" in other.message
    assert f'{ANNOTATION_SCALED_BY}: "a,grab"' in other.message
    # The backend's bounds, not the Server's.
    bounds = await _admit(gate, MODEL_SERVING, "m-a", server="a", server_max=4)
    assert bounds == Bounds(minimum=1, maximum=6, source="backend a of ModelBooster m")

    # Someone binds an AutoscalingPolicy to the backend: Kthena's autoscaler owns it now.
    fake.create({
        "apiVersion": AUTOSCALING_POLICY_BINDING.api_version, "kind": "AutoscalingPolicyBinding",
        "metadata": {"name": "by-hand", "namespace": NS},
        "spec": {"policyRef": {"name": "p"}, "scalingConfiguration": {
            "target": {"targetRef": {"name": "m-a"}}, "minReplicas": 1, "maxReplicas": 3}},
    })  # fmt: skip
    conflict = await _problem(_admit(gate, MODEL_SERVING, "m-a", server="a"))
    assert (conflict.reason, conflict.message) == (
        "AutoscalerConflict",
        "ModelServing m-a is also scaled by AutoscalingPolicyBinding by-hand: two scalers would undo each other; "
        "remove one",
    )


async def test_an_autoscaled_backend_is_refused(fake: FakeApiServer, gate: ScalingGate) -> None:
    policy = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}
    scaled = booster("m", backend("a", minReplicas=1, maxReplicas=4, autoscalingPolicy=policy))
    scaled["metadata"]["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true", ANNOTATION_SCALED_BY: "a"}
    stored = fake.create(copy.deepcopy(scaled))
    fake.create(serving("m-a", owner=stored))
    conflict = await _problem(_admit(gate, MODEL_SERVING, "m-a"))
    # Admission refuses the opt-in beside a policy (shared/external_scaling.py), so such an object, stored before
    # that rule, is not valid: Inferno leaves its replicas alone and says why.
    assert conflict.reason == "InvalidModelBooster"
    assert '"true" may not be set beside an autoscaling policy' in str(conflict)


# --- targets nobody controls: consent on the target --------------------------------------------------------


async def test_a_target_without_consent_is_refused_whoever_wrote_the_server(
    fake: FakeApiServer, gate: ScalingGate
) -> None:
    """The probe of the issue: an unowned ModelServing and a Deployment, and a Server naming each with bounds
    0..50000. Without the target's consent nothing may be scaled, and the refusal says how to consent."""
    fake.create(serving("loose"))
    fake.create(workload(DEPLOYMENT, "search"))
    for kind, name in ((MODEL_SERVING, "loose"), (DEPLOYMENT, "search")):
        refused = await _problem(_admit(gate, kind, name, server="grab", server_max=50_000))
        assert (refused.reason, refused.message) == (
            "ConsentMissing",
            f"{kind.kind} {name} names no Server that may scale it; annotate {kind.kind} {name} "
            f'{ANNOTATION_SCALED_BY}: "grab" to let Server grab scale it',
        )
    missing = await _problem(gate.targets.read_scale(MODEL_SERVING, NS, "gone"))
    assert missing.reason == "TargetNotFound"


async def test_a_consenting_target_is_bounded_by_the_server(fake: FakeApiServer, gate: ScalingGate) -> None:
    fake.create(workload(DEPLOYMENT, "search", consent=" grab , other,NOT A NAME"))
    required = await _problem(_admit(gate, DEPLOYMENT, "search", server="grab", server_max=None))
    assert required.reason == "BoundsRequired"
    assert await _admit(gate, DEPLOYMENT, "search", server="grab", server_max=3) == Bounds(1, 3, "Server")


async def test_a_replica_set_a_deployment_controls_is_refused_naming_it(
    fake: FakeApiServer, gate: ScalingGate
) -> None:
    owner = fake.create(workload(DEPLOYMENT, "web"))
    fake.create(workload(REPLICA_SET, "web-5d8f", consent="a", owner=owner))
    refused = await _problem(_admit(gate, REPLICA_SET, "web-5d8f"))
    assert (refused.reason, refused.message) == (
        "ControlledTarget",
        "ReplicaSet web-5d8f is controlled by Deployment web, which sets its replicas: target the Deployment "
        "instead",
    )


# --- other scalers ----------------------------------------------------------------------------------------


async def test_a_target_an_hpa_scales_is_refused_naming_the_hpa(fake: FakeApiServer, gate: ScalingGate) -> None:
    fake.create(workload(DEPLOYMENT, "search", consent="a"))
    fake.create(hpa("unrelated", "search", api_version="example.com/v1"))  # another group's "Deployment"
    fake.create(hpa("elsewhere", "other"))
    assert await _admit(gate, DEPLOYMENT, "search") == Bounds(1, 10, "Server")
    fake.create(hpa("search-hpa", "search"))
    conflict = await _problem(_admit(gate, DEPLOYMENT, "search"))
    assert (conflict.reason, conflict.message) == (
        "AutoscalerConflict",
        "Deployment search is also scaled by HorizontalPodAutoscaler search-hpa: two scalers would undo each "
        "other; remove one",
    )


async def test_a_target_a_keda_scaled_object_scales_is_refused_naming_it(
    fake: FakeApiServer, gate: ScalingGate
) -> None:
    fake.create(workload(DEPLOYMENT, "search", consent="a"))
    assert await _admit(gate, DEPLOYMENT, "search") == Bounds(1, 10, "Server")  # KEDA not installed: no rival
    fake.register_crd(copy.deepcopy(SCALED_OBJECT_CRD))
    # KEDA's default target kind is a Deployment: a scaleTargetRef with a name only names it.
    fake.create({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                 "metadata": {"name": "search-keda", "namespace": NS},
                 "spec": {"scaleTargetRef": {"name": "search"}, "triggers": []}})  # fmt: skip
    conflict = await _problem(_admit(gate, DEPLOYMENT, "search"))
    assert conflict.reason == "AutoscalerConflict"
    assert "is also scaled by ScaledObject search-keda" in conflict.message


async def test_a_second_server_takes_nothing_from_the_one_the_target_named(
    fake: FakeApiServer, gate: ScalingGate
) -> None:
    fake.create(workload(DEPLOYMENT, "search", consent="a"))
    # b names the same target: b is refused for want of consent, and cannot block a.
    refused = await _problem(_admit(gate, DEPLOYMENT, "search", server="b", rivals=["a"]))
    assert refused.reason == "ConsentMissing"
    assert "lets only Server a scale it, not b" in refused.message
    assert await _admit(gate, DEPLOYMENT, "search", server="a", rivals=["b"]) == Bounds(1, 10, "Server")
    # The target named both: neither may scale it, and each refusal names the other.
    await gate.targets.client.patch(DEPLOYMENT, NS, "search",
                                    {"metadata": {"annotations": {ANNOTATION_SCALED_BY: "a,b"}}})  # fmt: skip
    for server, rival in (("a", "b"), ("b", "a")):
        conflict = await _problem(_admit(gate, DEPLOYMENT, "search", server=server, rivals=[rival]))
        assert (conflict.reason, conflict.message) == (
            "AutoscalerConflict",
            f"Deployment search is also scaled by Server {rival}: two scalers would undo each other; remove one",
        )


# --- the engine a target runs (which series its queries read) -------------------------------------------


def model_server(name: str, engine: str) -> dict[str, Any]:
    return {"apiVersion": MODEL_SERVER.api_version, "kind": "ModelServer", "metadata": {"name": name, "namespace": NS},
            "spec": {"inferenceEngine": engine, "workloadSelector": {"matchLabels": {"app": name}},
                     "workloadPort": {"port": 30000}}}  # fmt: skip


async def test_a_targets_engine_is_the_one_its_same_named_model_server_names(
    fake: FakeApiServer, targets: Targets
) -> None:
    assert await targets.engine_of(NS, "m-a") is VLLM  # no ModelServer: a workload of one's own, vLLM
    fake.create(model_server("m-a", "SGLang"))
    fake.create(model_server("m-b", "vLLM"))
    assert await targets.engine_of(NS, "m-a") is SGLANG
    assert await targets.engine_of(NS, "m-b") is VLLM
    assert await targets.engine_of("elsewhere", "m-a") is VLLM  # the target's namespace only
    fake.faults.fail_next(1, status=403, verb="get", resource="modelservers")
    assert await targets.engine_of(NS, "m-a") is VLLM  # a Role from before this read: vLLM, as before
    fake.faults.fail_next(1, status=500, verb="get", resource="modelservers")
    problem = await _problem(targets.engine_of(NS, "m-a"))
    assert problem.reason == "TargetUnavailable"
    assert "ModelServer" in problem.message
