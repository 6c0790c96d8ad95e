"""What a Server's `targetRef` resolves to and when Scale actuation must keep off it, against the fake API server
(reconciler/inferno/targets.py, docs/design/inferno.md §13): known kinds, kinds found by discovery, kinds
without `/scale`; a ModelBooster's backend bounds, the opt-in it needs, the AutoscalingPolicies that own a
backend; a ModelServing nobody owns, bounded by the Server."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.inferno.kinds import MODEL_SERVING
from reconciler.inferno.targets import Bounds, TargetProblem, Targets
from reconciler.modelbooster.kinds import AUTOSCALING_POLICY_BINDING, MODEL_BOOSTER
from reconciler.runtime.client import KubeClient
from shared.api.inferno import TargetRef
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, backend, booster

ROOT = Path(__file__).resolve().parents[2]
CAPACITY_CRD = ROOT / "charts/modelbooster/charts/inferno-crds/crds/inferno.platform.ai_capacities.yaml"
ROLE = {"name": "leader", "replicas": 1, "workerReplicas": 0, "entryTemplate": {"spec": {"containers": []}}}


def serving(name: str, *, owner: dict[str, Any] | None = None, backend_name: str = "a") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"workload.serving.volcano.sh/backend-name":
                                                                          backend_name}}  # fmt: skip
    if owner is not None:
        meta = owner["metadata"]
        metadata["ownerReferences"] = [{"apiVersion": MODEL_BOOSTER.api_version, "kind": "ModelBooster",
                                        "name": meta["name"], "uid": meta["uid"], "controller": True}]  # fmt: skip
    return {"apiVersion": MODEL_SERVING.api_version, "kind": "ModelServing", "metadata": metadata,
            "spec": {"replicas": 1, "schedulerName": "volcano", "template": {"roles": [ROLE]}}}  # fmt: skip


@pytest.fixture
async def targets(fake: FakeApiServer) -> AsyncIterator[Targets]:
    fake.register_crd(yaml.safe_load(CAPACITY_CRD.read_text()))
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="test")
    try:
        yield Targets(client, field_manager="test")
    finally:
        await client.close()


async def _problem(call: Any) -> TargetProblem:
    with pytest.raises(TargetProblem) as caught:
        await call
    return caught.value


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


async def test_a_model_booster_backend_is_bounded_by_it_only_with_the_opt_in(fake: FakeApiServer,
                                                                             targets: Targets) -> None:  # fmt: skip
    fixed = booster("fixed", backend("a", minReplicas=2, maxReplicas=2))
    stored_fixed = fake.create(copy.deepcopy(fixed))
    fake.create(serving("fixed-a", owner=stored_fixed))
    refused = await _problem(targets.bounds(MODEL_SERVING, NS, "fixed-a", server_min=None, server_max=None))
    assert refused.reason == "ExternalScalingNotEnabled"
    assert ANNOTATION_EXTERNAL_REPLICAS in refused.message

    opted = booster("m", backend("a", minReplicas=1, maxReplicas=6))
    opted["metadata"]["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true"}
    stored = fake.create(copy.deepcopy(opted))
    fake.create(serving("m-a", owner=stored))
    bounds = await targets.bounds(MODEL_SERVING, NS, "m-a", server_min=3, server_max=4)
    # The backend's bounds, not the Server's.
    assert bounds == Bounds(minimum=1, maximum=6, source="backend a of ModelBooster m")

    # Someone binds an AutoscalingPolicy to the backend: Kthena's autoscaler owns it now.
    fake.create({
        "apiVersion": AUTOSCALING_POLICY_BINDING.api_version, "kind": "AutoscalingPolicyBinding",
        "metadata": {"name": "by-hand", "namespace": NS},
        "spec": {"policyRef": {"name": "p"}, "scalingConfiguration": {
            "target": {"targetRef": {"name": "m-a"}}, "minReplicas": 1, "maxReplicas": 3}},
    })  # fmt: skip
    targets.new_run()
    conflict = await _problem(targets.bounds(MODEL_SERVING, NS, "m-a", server_min=None, server_max=None))
    assert (conflict.reason, conflict.message) == (
        "AutoscalerConflict", "AutoscalingPolicyBinding by-hand scales ModelServing m-a: remove it or Scale actuation"
    )


async def test_an_autoscaled_backend_is_refused(fake: FakeApiServer, targets: Targets) -> None:
    policy = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}
    scaled = booster("m", backend("a", minReplicas=1, maxReplicas=4, autoscalingPolicy=policy))
    scaled["metadata"]["annotations"] = {ANNOTATION_EXTERNAL_REPLICAS: "true"}
    stored = fake.create(copy.deepcopy(scaled))
    fake.create(serving("m-a", owner=stored))
    conflict = await _problem(targets.bounds(MODEL_SERVING, NS, "m-a", server_min=None, server_max=None))
    # Admission refuses the opt-in beside a policy (shared/external_scaling.py), so such an object, stored before
    # that rule, is not valid: Inferno leaves its replicas alone and says why.
    assert conflict.reason == "InvalidModelBooster"
    assert '"true" may not be set beside an autoscaling policy' in str(conflict)


async def test_a_target_nobody_owns_is_bounded_by_the_server(fake: FakeApiServer, targets: Targets) -> None:
    fake.create(serving("loose"))
    required = await _problem(targets.bounds(MODEL_SERVING, NS, "loose", server_min=None, server_max=None))
    assert required.reason == "BoundsRequired"
    assert await targets.bounds(MODEL_SERVING, NS, "loose", server_min=None, server_max=3) == Bounds(1, 3, "Server")
    missing = await _problem(targets.read_scale(MODEL_SERVING, NS, "gone"))
    assert missing.reason == "TargetNotFound"
