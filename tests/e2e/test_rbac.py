"""The chart's RBAC against the requests each process really makes: nothing used that is not granted, nothing
granted that is never used.

The requests are those of the whole e2e session so far, plus a tour of the user actions that make the
reconciler use its rarer rights, so the comparison does not depend on which other e2e tests ran:
- children edited by hand are restored (server-side apply: patch, every child kind);
- same-named objects someone else created make a ModelBooster fail (create -> AlreadyExists -> get, every
  kind), repeatedly (the repeated Warning event is patched), until they are removed;
- a backend renamed and its autoscaling dropped, and a ModelRoute left over from an earlier spec, are pruned
  (delete, every kind);
- the webhook's Secrets are damaged and repaired (update, both Secrets);
- an Inferno optimisation runs (Server and Optimizer patches, Optimizer status).
Each step waits for its visible outcome, which also checks that the reconciler did the right thing.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from cryptography import x509

from tests.chart.rbac import Grant
from tests.chart.render import NAMESPACE
from tests.e2e.harness import CA_SECRET, TLS_SECRET, Cluster, identity_of, wait_for
from tests.e2e.rbac_check import api_requests, denied, flush_watches, grants, non_resource_requests
from tests.e2e.user import (
    AUTOSCALING_BINDINGS,
    AUTOSCALING_POLICIES,
    CHILD_KINDS,
    EXAMPLES,
    MODEL_ROUTES,
    MODEL_SERVERS,
    MODEL_SERVINGS,
    WORKLOAD,
    condition,
    core,
    create_booster,
    custom,
    delete_booster,
    get_booster,
    get_object,
    load_example,
    wait_condition,
    wait_gone,
    watch_booster,
)

Obj = dict[str, Any]
NS = "e2e"
REVISION = "workload.serving.volcano.sh/revision"
INFERNO = "inferno.platform.ai"
INFERNO_PLURALS = {
    "Accelerator": "accelerators",
    "Model": "models",
    "ServiceClass": "serviceclasses",
    "Server": "servers",
    "Capacity": "capacities",
    "Optimizer": "optimizers",
}

# Granted but not exercised by the e2e cluster, each with the reason. The check below is an equality, so a
# grant that becomes used (or a new unused one) forces this list to be revisited.
INFERNO_STATEFUL_ONLY = "only a remote optimizer in stateful mode (INFERNO_STATELESS=false) marks mirrored " \
    "objects active in their status; the chart's default, used here, is the embedded optimizer"  # fmt: skip
INFERNO_SCALE_ONLY = "only Inferno's Scale actuation of a Server with a targetRef reads a target (its consent " \
    "and owner) and the other scalers that may name it, and sets /scale; the example Servers target nothing " \
    "(tests/reconciler/test_inferno_loop.py and tests/realapi/test_inferno_consent.py check that its requests " \
    "are all granted)"  # fmt: skip
SCALED_APPS = ("deployments", "statefulsets", "replicasets")
ALLOWED_UNUSED: dict[Grant, str] = {
    **{
        Grant(INFERNO, f"{resource}/status", "patch", None): INFERNO_STATEFUL_ONLY
        for resource in ("accelerators", "models", "serviceclasses", "capacities", "servers")
    },
    **{
        Grant(group, f"{resource}/scale", verb, None): INFERNO_SCALE_ONLY
        for group, resource in (
            (WORKLOAD, "modelservings"),
            ("apps", "deployments"),
            ("apps", "statefulsets"),
            ("apps", "replicasets"),
        )
        for verb in ("get", "patch")
    },
    # Not deployments: the reconciler reads its own Deployment (the owner of its Lease), which the cluster-wide
    # read Inferno is granted covers as well as the by-name one.
    **{
        Grant("apps", resource, "get", None): INFERNO_SCALE_ONLY
        for resource in SCALED_APPS
        if resource != "deployments"
    },
    Grant("autoscaling", "horizontalpodautoscalers", "list", None): INFERNO_SCALE_ONLY,
    Grant("keda.sh", "scaledobjects", "list", None): INFERNO_SCALE_ONLY,
}


def _patch(cluster: Cluster, kind: tuple[str, str], name: str, body: Obj, namespace: str = NS) -> None:
    custom(cluster).patch_namespaced_custom_object(kind[0], "v1alpha1", namespace, kind[1], name, body)


def _create(cluster: Cluster, kind: tuple[str, str], obj: Obj, namespace: str = NS) -> None:
    custom(cluster).create_namespaced_custom_object(kind[0], "v1alpha1", namespace, kind[1], obj)


def _children(name: str) -> dict[tuple[str, str], str]:
    """The children of a ModelBooster made from examples/backend-autoscaling.yaml (backend `gpu`)."""
    return {
        MODEL_SERVINGS: f"{name}-gpu",
        MODEL_SERVERS: f"{name}-gpu",
        MODEL_ROUTES: name,
        AUTOSCALING_POLICIES: f"{name}-gpu",
        AUTOSCALING_BINDINGS: f"{name}-gpu",
    }


def _booster(name: str) -> Obj:
    document = load_example("backend-autoscaling.yaml")
    document["metadata"].update(name=name, namespace=NS)
    return document


def _restore_edited_children(cluster: Cluster, name: str) -> None:
    for kind, child in _children(name).items():
        _patch(cluster, kind, child, {"metadata": {"labels": {REVISION: "edited-by-hand"}}})
    for kind, child in _children(name).items():

        def restored(kind: tuple[str, str] = kind, child: str = child) -> bool:
            obj = get_object(cluster, kind, NS, child)
            return obj is not None and obj["metadata"]["labels"][REVISION] != "edited-by-hand"

        wait_for(restored, what=f"{kind[1]} {child} restored")


def _adopt_an_orphan(cluster: Cluster, name: str) -> None:
    """A child whose owner reference was removed is adopted back, after a fresh read of its ModelBooster."""
    _patch(cluster, MODEL_SERVERS, f"{name}-gpu", {"metadata": {"ownerReferences": None}})

    def adopted() -> bool:
        obj = get_object(cluster, MODEL_SERVERS, NS, f"{name}-gpu") or {}
        return bool(obj.get("metadata", {}).get("ownerReferences"))

    wait_for(adopted, what=f"ModelServer {name}-gpu adopted")


def _fail_on_foreign_objects(cluster: Cluster, template: str) -> None:
    """Objects named like another ModelBooster's children, created by someone else, are never taken over."""
    for kind, child in _children(template).items():
        original = get_object(cluster, kind, NS, child)
        assert original is not None
        name = child.replace(template, "taken", 1)
        _create(cluster, kind, {"apiVersion": original["apiVersion"], "kind": original["kind"],
                                "metadata": {"name": name}, "spec": copy.deepcopy(original["spec"])})  # fmt: skip
    create_booster(cluster, _booster("taken"))

    def failing(obj: Obj) -> bool:
        failed = condition(obj, "Failed")
        return failed is not None and failed["status"] == "True" and "refusing to take it over" in failed["message"]

    watch_booster(cluster, NS, "taken", failing)
    # The reconciler retries with backoff; the repeated Warning is one Event whose count grows (a patch).
    wait_for(
        lambda: any(
            (event.count or 0) >= 2
            for event in core(cluster)
            .list_namespaced_event(NS, field_selector="involvedObject.name=taken,type=Warning")
            .items
        ),
        what="a repeated Warning event on ModelBooster taken",
    )
    for kind, child in _children("taken").items():
        custom(cluster).delete_namespaced_custom_object(kind[0], "v1alpha1", NS, kind[1], child)
    wait_condition(cluster, NS, "taken", "Failed", "False")
    delete_booster(cluster, NS, "taken")


def _prune_stale_children(cluster: Cluster, name: str) -> None:
    route = get_object(cluster, MODEL_ROUTES, NS, name)
    assert route is not None
    # A ModelRoute left behind by an earlier spec: still labelled and controlled by this ModelBooster.
    leftover = {
        "apiVersion": route["apiVersion"],
        "kind": route["kind"],
        "metadata": {
            "name": f"{name}-previous",
            "labels": route["metadata"]["labels"],
            "ownerReferences": route["metadata"]["ownerReferences"],
        },
        "spec": route["spec"],
    }
    _create(cluster, MODEL_ROUTES, leftover)
    booster = get_booster(cluster, NS, name)
    assert booster is not None
    backend = booster["spec"]["backends"][0]
    backend["name"] = "gpu2"  # a new backend: the old one's ModelServing and ModelServer go
    del backend["autoscalingPolicy"]  # no autoscaling: its policy and binding go
    backend["maxReplicas"] = backend["minReplicas"]
    custom(cluster).replace_namespaced_custom_object(WORKLOAD, "v1alpha1", NS, "modelboosters", name, booster)
    wait_condition(cluster, NS, name, "Initialized", "True")
    for kind, child in [*_children(name).items(), (MODEL_ROUTES, f"{name}-previous")]:
        if (kind, child) != (MODEL_ROUTES, name):
            wait_gone(cluster, kind, NS, child)
    assert get_object(cluster, MODEL_SERVINGS, NS, f"{name}-gpu2") is not None


def _damage_and_repair_secrets(cluster: Cluster) -> None:
    damaged = base64.b64encode(b"not a PEM block").decode()
    for secret, key in ((TLS_SECRET, "tls.crt"), (CA_SECRET, "ca.key")):
        core(cluster).patch_namespaced_secret(secret, NAMESPACE, {"data": {key: damaged}})

        def repaired(secret: str = secret, key: str = key) -> bool:
            stored = cluster.get("v1", "secrets", secret, NAMESPACE)
            return stored is not None and stored["data"][key] != damaged

        wait_for(repaired, what=f"Secret {secret} repaired")
    pem = cluster.get("v1", "secrets", TLS_SECRET, NAMESPACE)["data"]["tls.crt"]  # type: ignore[index]
    x509.load_pem_x509_certificate(base64.b64decode(pem))
    # Admission kept working through both repairs (the webhook never swaps in a broken certificate).
    create_booster(cluster, _booster("after-repair"), dry_run="All")


def _run_inferno(cluster: Cluster) -> None:
    import yaml

    for path in sorted((EXAMPLES / "inferno").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                plural = INFERNO_PLURALS[document["kind"]]
                custom(cluster).create_namespaced_custom_object(INFERNO, "v1alpha1", NS, plural, document)
    custom(cluster).patch_namespaced_custom_object(
        INFERNO, "v1alpha1", NS, "optimizers", "inferno", {"spec": {"optimize": True}}
    )

    def finished() -> bool:
        optimizer = custom(cluster).get_namespaced_custom_object(INFERNO, "v1alpha1", NS, "optimizers", "inferno")
        servers = custom(cluster).list_namespaced_custom_object(INFERNO, "v1alpha1", NS, "servers")["items"]
        return optimizer["spec"].get("optimize") is False and all("desiredAlloc" in s["spec"] for s in servers)

    wait_for(finished, what="the Inferno optimisation to finish", timeout=15)


@pytest.fixture(scope="module")
def toured(cluster: Cluster) -> Cluster:
    create_booster(cluster, _booster("rbac"))
    wait_condition(cluster, NS, "rbac", "Initialized", "True")
    _restore_edited_children(cluster, "rbac")
    _adopt_an_orphan(cluster, "rbac")
    _fail_on_foreign_objects(cluster, "rbac")
    _prune_stale_children(cluster, "rbac")
    _damage_and_repair_secrets(cluster)
    _run_inferno(cluster)
    delete_booster(cluster, NS, "rbac")
    flush_watches(cluster)
    return cluster


def test_every_request_comes_from_a_known_client(toured: Cluster) -> None:
    strangers = {entry.user_agent for entry in toured.fake.requests.entries() if identity_of(entry) == "unknown"}
    assert strangers == set()
    # The webhook has no credentials and needs none: it never calls the API server.
    assert toured.requests_of("webhook") == []
    assert grants(toured, "webhook") == frozenset()


def test_the_reconciler_is_allowed_every_request_it_makes(toured: Cluster) -> None:
    assert non_resource_requests(toured, "reconciler") == []
    assert len(api_requests(toured, "reconciler")) > 100
    assert denied(toured, "reconciler") == []


def test_the_reconciler_uses_every_right_it_is_granted(toured: Cluster) -> None:
    from tests.chart.rbac import unused_grants

    unused = unused_grants(grants(toured, "reconciler"), api_requests(toured, "reconciler"))
    assert sorted(unused) == sorted(ALLOWED_UNUSED)


def test_the_tour_covered_every_child_kind(toured: Cluster) -> None:
    # Independent of the chart: the tour really made the reconciler read, patch and delete every child kind.
    requests = api_requests(toured, "reconciler")
    for group, plural in CHILD_KINDS:
        for verb in ("get", "create", "patch", "delete", "list", "watch"):
            assert any((r.api_group, r.resource, r.verb) == (group, plural, verb) for r in requests), (plural, verb)
