"""A ModelBooster stored under Kthena v0.1.0 with a field we do not support, through the fake API server.

Kthena's CRD accepted a backend `autoscalingPolicy.behavior.scaleUp.panicPolicy`; such an object is still
there after our chart is installed. The reconciler must mark it Failed with the webhook's message and what
to do, create no child while it carries the field, and converge once the field is removed.

The object is created under a ModelBooster CRD without our rules for the unsupported fields, as Kthena's
CRD was; then our CRD replaces it, as installing our chart does, and only then the reconciler starts. Its
status writes must pass our CRD's rules (they spare carried-over values), as on a real API server. No
admission webhook is registered: the webhook's side is tests/webhook/test_update_ratchet.py.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final

import pytest

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING
from reconciler.runtime.client import JSON_PATCH
from reconciler.runtime.kinds import Kind
from shared.unsupported import UNSUPPORTED_DETAILS
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import (
    NS,
    Cluster,
    RunningReconciler,
    backend,
    booster,
    child_writes,
    crd_documents,
    eventually,
    quiet,
)

PANIC = "panicPolicy is not supported; create AutoscalingPolicy + Binding yourself"
BEHAVIOR = "behavior is not supported; create AutoscalingPolicy + Binding yourself"
PATH = "spec.backends[0].autoscalingPolicy.behavior"


def _without_unsupported_rules(node: Any) -> Any:
    if isinstance(node, dict):
        rules = node.get("x-kubernetes-validations")
        kept = {key: _without_unsupported_rules(value) for key, value in node.items()}
        if isinstance(rules, list):
            kept["x-kubernetes-validations"] = [r for r in rules if r.get("message") not in UNSUPPORTED_DETAILS]
            if not kept["x-kubernetes-validations"]:
                del kept["x-kubernetes-validations"]
        return kept
    if isinstance(node, list):
        return [_without_unsupported_rules(item) for item in node]
    return node


CRD: Final = Kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)


def _our_modelbooster_crd() -> dict[str, Any]:
    return next(copy.deepcopy(d) for d in crd_documents() if d["spec"]["names"]["kind"] == MODEL_BOOSTER.kind)


@pytest.fixture
async def fake(fake_apiserver_inloop: FakeApiServer) -> FakeApiServer:
    """Like the package's `fake`, with the ModelBooster CRD as Kthena's took these fields."""
    for document in crd_documents():
        ours = document["spec"]["names"]["kind"] == MODEL_BOOSTER.kind
        fake_apiserver_inloop.register_crd(_without_unsupported_rules(document) if ours else copy.deepcopy(document))
    fake_apiserver_inloop.create_namespace(NS)
    return fake_apiserver_inloop


async def _install_our_crd(cluster: Cluster) -> None:
    definition = _our_modelbooster_crd()
    live = await cluster.client.get(CRD, None, definition["metadata"]["name"])
    definition["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    await cluster.client.replace(CRD, definition)


def kthena_object() -> dict[str, Any]:
    policy = {
        "tolerancePercent": 10,
        "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": "10"}],
        "behavior": {
            "scaleUp": {"panicPolicy": {"panicThresholdPercent": 200, "period": "10s", "percent": 1000}},
            "scaleDown": {"stabilizationWindow": "5m"},
        },
    }
    return booster("m", backend("a", minReplicas=1, maxReplicas=3, autoscalingPolicy=policy))


async def test_a_carried_over_field_leaves_the_object_failed_until_it_is_removed(
    cluster: Cluster, start_reconciler: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    cluster.create_booster(kthena_object())
    await _install_our_crd(cluster)
    reconciler = await start_reconciler()
    await eventually(lambda: cluster.condition("m", "Failed") == "True", message="Failed")
    failed = cluster.conditions()["Failed"]
    assert failed["reason"] == "InvalidSpec"
    lines = failed["message"].split("\n")
    # The webhook's message, as a CREATE of this object would be denied ...
    assert lines[:3] == [
        "validation failed:",
        f"  - {PATH}.scaleUp.panicPolicy: Forbidden: {PANIC}",
        f"  - {PATH}: Forbidden: {BEHAVIOR}",
    ]
    # ... then what to do, down to the command.
    assert lines[3] == (
        "This ModelBooster is not reconciled until it is fixed: its children are neither created, updated nor deleted."
    )
    command = re.fullmatch(r"Remove the unsupported fields \(.*\), for example: (kubectl patch .*)", lines[4])
    assert command is not None, lines[4]
    assert command.group(1) == (
        "kubectl patch modelbooster m -n ns --type=json "
        """-p '[{"op":"remove","path":"/spec/backends/0/autoscalingPolicy/behavior"}]'"""
    )
    assert len(lines) == 5
    assert cluster.condition("m", "Initialized") == "False"
    # The Event is posted beside the status write, so it may land just after the condition.
    await eventually(lambda: cluster.events("InvalidSpec"), message="InvalidSpec event")
    assert [event["message"] for event in cluster.events("InvalidSpec")] == [failed["message"]]

    # Other edits keep it Failed, and no child is made from an object that still carries the field.
    live = cluster.get(MODEL_BOOSTER, "m") or {}
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"labels": {"team": "inference"}}})
    spec = copy.deepcopy(live["spec"])
    spec["backends"][0]["maxReplicas"] = 4
    await cluster.replace_spec("m", spec)
    await eventually(lambda: cluster.conditions()["Failed"].get("observedGeneration") == 2, message="generation 2")
    await quiet(0.3)
    assert cluster.condition("m", "Failed") == "True"
    assert child_writes(reconciler) == []
    assert all(names == [] for names in cluster.children().values())

    # The patch the message gives, as the user would send it: the object converges.
    patch = json.loads(command.group(1).split("-p ", 1)[1].strip("'"))
    await cluster.client.patch(MODEL_BOOSTER, NS, "m", patch, patch_type=JSON_PATCH, field_manager="kubectl-patch")
    await eventually(lambda: cluster.condition("m", "Failed") == "False", message="Failed cleared")
    assert cluster.condition("m", "Initialized") == "True"
    assert cluster.conditions()["Failed"]["reason"] == "ReconcileSucceeded"
    assert cluster.conditions()["Failed"]["observedGeneration"] == 3
    assert cluster.names(MODEL_SERVING) == ["m-a"]
    assert "behavior" not in (cluster.get(MODEL_BOOSTER, "m") or {})["spec"]["backends"][0]["autoscalingPolicy"]
