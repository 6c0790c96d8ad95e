"""The reconciler's rights, and the helpers the end-to-end tests use to compare them with real requests.

Expected grants are written from the requests each process makes (docs/design/reconciler.md,
docs/design/inferno.md §8, docs/design/certificates.md §2) and from Q2 of docs/design/quirks.md §1 (the
reference could not create autoscaling objects nor delete stale children).
"""

from __future__ import annotations

import pytest

from reconciler.modelbooster.kinds import CHILD_KINDS, MODEL_BOOSTER
from reconciler.runtime.kinds import CONFIG_MAP, EVENT, LEASE, POD
from tests.chart.rbac import (
    ApiRequest,
    Grant,
    RbacError,
    grants_for_service_account,
    is_allowed,
    request_from_http,
    unused_grants,
)
from tests.chart.render import NAMESPACE, Rendered, render

P = "mb-modelbooster"
RECONCILER_SA = f"{P}-reconciler"
WORKLOAD = "workload.serving.volcano.sh"
NETWORKING = "networking.serving.volcano.sh"
INFERNO = "inferno.platform.ai"
# Children: informers list/watch, create, read back after AlreadyExists, server-side apply (patch), delete.
CHILD_WRITES = ("get", "list", "watch", "create", "patch", "delete")
SCALED_APPS = ("deployments", "statefulsets", "replicasets")


def _workload_grants(namespace: str | None) -> set[Grant]:
    """The ModelBooster controller's rights, and by default the Inferno controller's, in `namespace`."""
    return _modelbooster_grants(namespace) | _inferno_grants(namespace)


def _modelbooster_grants(namespace: str | None) -> set[Grant]:
    # get: adoption reads the ModelBooster afresh before taking an orphan.
    grants = {Grant(WORKLOAD, "modelboosters", verb, namespace) for verb in ("get", "list", "watch")}
    grants.add(Grant(WORKLOAD, "modelboosters/status", "patch", namespace))
    for group, resources in (
        (WORKLOAD, ("modelservings", "autoscalingpolicies", "autoscalingpolicybindings")),
        (NETWORKING, ("modelservers", "modelroutes")),
    ):
        grants |= {Grant(group, resource, verb, namespace) for resource in resources for verb in CHILD_WRITES}
    grants |= {Grant("", "events", verb, namespace) for verb in ("create", "patch")}
    grants |= {Grant("", "pods", verb, namespace) for verb in ("list", "watch")}
    return grants


def _inferno_grants(namespace: str | None, *, extra: tuple[tuple[str, str], ...] = ()) -> set[Grant]:
    grants: set[Grant] = set()
    for resource in ("accelerators", "models", "serviceclasses", "capacities"):
        grants |= {Grant(INFERNO, resource, verb, namespace) for verb in ("list", "watch")}
    for resource in ("servers", "optimizers"):
        grants |= {Grant(INFERNO, resource, verb, namespace) for verb in ("list", "watch", "patch")}
    for resource in ("optimizers", "accelerators", "models", "serviceclasses", "servers", "capacities"):
        grants.add(Grant(INFERNO, f"{resource}/status", "patch", namespace))
    grants |= {Grant("", "events", verb, namespace) for verb in ("create", "patch")}
    # Scale actuation (docs/design/inferno.md §13, §18): the target (its consent and its controller), its /scale,
    # the ModelBooster that controls a targeted ModelServing, and the other scalers that may name it.
    targets = ((WORKLOAD, "modelservings"), *(("apps", r) for r in SCALED_APPS), *extra)
    for group, resource in targets:
        grants.add(Grant(group, resource, "get", namespace))
        grants |= {Grant(group, f"{resource}/scale", verb, namespace) for verb in ("get", "patch")}
    grants.add(Grant(WORKLOAD, "modelboosters", "get", namespace))
    # The ModelServer named like a target says which engine's series to read (reconciler/inferno/targets.py).
    grants.add(Grant(NETWORKING, "modelservers", "get", namespace))
    # A disaggregated ModelServing's roles have no /scale: their replicas are set by a JSON patch (§19).
    grants.add(Grant(WORKLOAD, "modelservings", "patch", namespace))
    grants.add(Grant(WORKLOAD, "autoscalingpolicybindings", "list", namespace))
    grants.add(Grant("autoscaling", "horizontalpodautoscalers", "list", namespace))
    grants.add(Grant("keda.sh", "scaledobjects", "list", namespace))
    return grants


def _namespace_grants(watched: tuple[str, ...] = ()) -> set[Grant]:
    """Namespaces being deleted are watched (runtime/namespaces.py): all of them, or the watched ones by name."""
    names = frozenset(watched)
    return {Grant("", "namespaces", verb, None, names) for verb in ("list", "watch")}


def _release_namespace_grants(*, self_signed: bool) -> set[Grant]:
    settings = frozenset({f"{P}-reconciler"})
    grants = {Grant("", "configmaps", verb, NAMESPACE, settings) for verb in ("list", "watch")}
    grants.add(Grant("coordination.k8s.io", "leases", "create", NAMESPACE))
    # The Lease by name: read and renewed, and watched so that a standby takes a released one at once.
    lease = frozenset({f"{P}-reconciler"})
    grants |= {Grant("coordination.k8s.io", "leases", v, NAMESPACE, lease) for v in ("get", "list", "watch", "update")}
    # Its own Deployment, read once to own the Lease (docs/design/webhook.md §10).
    grants.add(Grant("apps", "deployments", "get", NAMESPACE, frozenset({f"{P}-reconciler"})))
    if self_signed:
        secrets = frozenset({f"{P}-webhook-tls", f"{P}-webhook-ca"})
        grants.add(Grant("", "secrets", "create", NAMESPACE))
        grants |= {Grant("", "secrets", verb, NAMESPACE, secrets) for verb in ("get", "list", "watch", "update")}
        # The webhook Service's EndpointSlices: the configurations are armed once a webhook pod is ready.
        grants |= {Grant("discovery.k8s.io", "endpointslices", verb, NAMESPACE) for verb in ("list", "watch")}
    return grants


def _ca_injection_grants() -> set[Grant]:
    grants: set[Grant] = set()
    for resource in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        grants |= {Grant("admissionregistration.k8s.io", resource, verb, None) for verb in ("get", "list", "watch")}
        grants |= {Grant("admissionregistration.k8s.io", resource, "update", None, frozenset({P}))}
    return grants


def _crd_grants() -> set[Grant]:
    """What the cluster serves is read from the CRDs (reconciler/runtime/discovery.py): one list+watch."""
    return {Grant("apiextensions.k8s.io", "customresourcedefinitions", verb, None) for verb in ("list", "watch")}


def test_default_reconciler_grants(defaults: Rendered) -> None:
    grants = grants_for_service_account(defaults.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    expected = (
        _workload_grants(None) | _release_namespace_grants(self_signed=True) | _ca_injection_grants() | _crd_grants()
        | _namespace_grants()
    )  # fmt: skip
    assert set(grants) == expected


def test_cert_manager_mode_grants_no_secrets_and_no_webhook_configurations(
    rendered_scenarios: dict[str, Rendered],
) -> None:
    rendered = rendered_scenarios["cert-manager"]
    grants = grants_for_service_account(rendered.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    assert set(grants) == (
        _workload_grants(None) | _release_namespace_grants(self_signed=False) | _crd_grants() | _namespace_grants()
    )


def test_watched_namespaces_get_roles_and_no_cluster_wide_workload_rights(
    rendered_scenarios: dict[str, Rendered],
) -> None:
    rendered = rendered_scenarios["namespaces"]
    grants = grants_for_service_account(rendered.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    expected = (
        _workload_grants("team-a")
        | _workload_grants("team-b")
        | _release_namespace_grants(self_signed=True)
        | _ca_injection_grants()
        | _crd_grants()
        | _namespace_grants(("team-a", "team-b"))
    )
    assert set(grants) == expected


def test_scale_rights_exist_only_where_inferno_watches() -> None:
    """inferno.namespaces narrows the Inferno rights (and /scale with them) to Roles in those namespaces, while
    ModelBoosters are watched everywhere; extra target kinds are granted there too."""
    extra = [{"apiGroup": "argoproj.io", "resources": ["rollouts"]}]
    rendered = render({"inferno": {"namespaces": ["serving"], "extraTargetKinds": extra}})
    grants = grants_for_service_account(rendered.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    expected = (
        _modelbooster_grants(None) | _inferno_grants("serving", extra=(("argoproj.io", "rollouts"),))
        | _release_namespace_grants(self_signed=True) | _ca_injection_grants() | _crd_grants() | _namespace_grants()
    )  # fmt: skip
    assert set(grants) == expected
    assert not [g for g in grants if g.resource.endswith("/scale") and g.namespace != "serving"]
    args = rendered.deployment("reconciler")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--inferno-namespaces=serving" in args


def test_without_inferno_no_scale_rights() -> None:
    rendered = render({"inferno": {"enabled": False}})
    grants = grants_for_service_account(rendered.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    # The one apps right left is reading the reconciler's own Deployment by name, the owner of its Lease.
    own_deployment = Grant("apps", "deployments", "get", NAMESPACE, frozenset({f"{P}-reconciler"}))
    assert own_deployment in grants
    assert not [
        g for g in grants - {own_deployment} if g.resource.endswith("/scale") or g.api_group in (INFERNO, "apps")
    ]


def test_leader_election_off_drops_the_lease_rights() -> None:
    rendered = render({"reconciler": {"leaderElection": {"enabled": False}}})
    grants = grants_for_service_account(rendered.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    assert not [g for g in grants if g.resource == "leases"]


@pytest.mark.parametrize("scenario", ["defaults", "cert-manager", "namespaces", "webhook-disabled", "everything"])
def test_the_webhook_has_no_rights_at_all(rendered_scenarios: dict[str, Rendered], scenario: str) -> None:
    rendered = rendered_scenarios[scenario]
    assert grants_for_service_account(rendered.objects, service_account=f"{P}-webhook", namespace=NAMESPACE) == set()


def test_reconciler_can_do_what_the_reference_was_denied(defaults: Rendered) -> None:
    """Q2: Kthena's chart lacked create/update on autoscaling objects and delete on the children (we change
    objects by server-side apply, a patch)."""
    grants = grants_for_service_account(defaults.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    for group, resource in (
        (WORKLOAD, "autoscalingpolicies"),
        (WORKLOAD, "autoscalingpolicybindings"),
        (WORKLOAD, "modelservings"),
        (NETWORKING, "modelservers"),
        (NETWORKING, "modelroutes"),
    ):
        for verb in ("create", "patch", "delete"):
            assert is_allowed(grants, ApiRequest(group, resource, verb, "team-a", "llama-vllm")), (resource, verb)


def test_dangerous_rights_are_absent(rendered_scenarios: dict[str, Rendered]) -> None:
    for name, rendered in rendered_scenarios.items():
        grants = grants_for_service_account(rendered.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
        for grant in grants:
            assert grant.verb not in ("escalate", "bind", "impersonate", "deletecollection"), (name, grant)
            assert grant.resource not in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"), name
            # Secrets only in the release namespace and only ours (create cannot be limited by name).
            if grant.resource == "secrets":
                assert grant.namespace == NAMESPACE, (name, grant)
                assert grant.resource_names or grant.verb == "create", (name, grant)
        assert not is_allowed(grants, ApiRequest("", "secrets", "list", NAMESPACE)), name
        assert not is_allowed(grants, ApiRequest("", "secrets", "get", "team-a", f"{P}-webhook-tls")), name


def test_every_rendered_role_is_bound_to_the_reconciler(rendered_scenarios: dict[str, Rendered]) -> None:
    for name, rendered in rendered_scenarios.items():
        roles = {
            (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
            for o in rendered.objects
            if o["kind"] in ("Role", "ClusterRole")
        }
        bound = set()
        for binding in rendered.of_kind("RoleBinding") + rendered.of_kind("ClusterRoleBinding"):
            namespace = binding["metadata"].get("namespace") if binding["roleRef"]["kind"] == "Role" else None
            bound.add((binding["roleRef"]["kind"], namespace, binding["roleRef"]["name"]))
            assert [s["name"] for s in binding["subjects"]] == [
                "rc-sa" if name == "existing-service-accounts" else RECONCILER_SA
            ]
        assert roles == bound, name


# --- the helpers themselves -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        (
            "GET",
            "/apis/workload.serving.volcano.sh/v1alpha1/modelboosters",
            "watch=true&resourceVersion=5",
            ApiRequest(WORKLOAD, "modelboosters", "watch", None),
        ),
        (
            "GET",
            "/apis/workload.serving.volcano.sh/v1alpha1/modelboosters",
            "",
            ApiRequest(WORKLOAD, "modelboosters", "list", None),
        ),
        (
            "PATCH",
            "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/ml/modelboosters/llama/status",
            "",
            ApiRequest(WORKLOAD, "modelboosters/status", "patch", "ml", "llama"),
        ),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/sys/leases/lock",
            "",
            ApiRequest("coordination.k8s.io", "leases", "update", "sys", "lock"),
        ),
        ("POST", "/api/v1/namespaces/ml/events", "", ApiRequest("", "events", "create", "ml")),
        (
            "GET",
            "/api/v1/namespaces/sys/configmaps",
            "fieldSelector=metadata.name%3Dsettings&watch=1",
            ApiRequest("", "configmaps", "watch", "sys", "settings"),
        ),
        (
            "GET",
            "/api/v1/namespaces/sys/configmaps",
            "fieldSelector=metadata.name%3D%3Dsettings",
            ApiRequest("", "configmaps", "list", "sys", "settings"),
        ),
        (
            "DELETE",
            "/apis/networking.serving.volcano.sh/v1alpha1/namespaces/ml/modelroutes/llama",
            "",
            ApiRequest(NETWORKING, "modelroutes", "delete", "ml", "llama"),
        ),
        (
            "DELETE",
            "/apis/networking.serving.volcano.sh/v1alpha1/namespaces/ml/modelroutes",
            "",
            ApiRequest(NETWORKING, "modelroutes", "deletecollection", "ml"),
        ),
        (
            "GET",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mb",
            "",
            ApiRequest("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get", None, "mb"),
        ),
        ("GET", "/api/v1/namespaces/ml", "", ApiRequest("", "namespaces", "get", None, "ml")),
    ],
)
def test_request_from_http(method: str, path: str, query: str, expected: ApiRequest) -> None:
    assert request_from_http(method, path, query) == expected


def test_request_from_http_rejects_non_resource_paths() -> None:
    with pytest.raises(RbacError, match="not a resource path"):
        request_from_http("GET", "/healthz")


def test_resource_names_limit_the_request_not_the_create() -> None:
    grants = {
        Grant("", "secrets", "get", "sys", frozenset({"tls"})),
        Grant("", "secrets", "create", "sys"),
        Grant("", "configmaps", "watch", "sys", frozenset({"settings"})),
    }
    assert is_allowed(grants, ApiRequest("", "secrets", "get", "sys", "tls"))
    assert not is_allowed(grants, ApiRequest("", "secrets", "get", "sys", "other"))
    assert not is_allowed(grants, ApiRequest("", "secrets", "get", "elsewhere", "tls"))
    assert is_allowed(grants, ApiRequest("", "secrets", "create", "sys"))
    # A watch of one named object needs the field selector, an unfiltered one is denied.
    assert is_allowed(
        grants,
        request_from_http(
            "GET", "/api/v1/namespaces/sys/configmaps", "watch=true&fieldSelector=metadata.name%3Dsettings"
        ),
    )
    assert not is_allowed(grants, request_from_http("GET", "/api/v1/namespaces/sys/configmaps", "watch=true"))


def test_cluster_wide_grants_cover_every_namespace_and_namespaced_ones_only_theirs() -> None:
    cluster = {Grant("", "pods", "list", None)}
    assert is_allowed(cluster, ApiRequest("", "pods", "list", "any"))
    assert is_allowed(cluster, ApiRequest("", "pods", "list", None))
    namespaced = {Grant("", "pods", "list", "a")}
    assert is_allowed(namespaced, ApiRequest("", "pods", "list", "a"))
    assert not is_allowed(namespaced, ApiRequest("", "pods", "list", None))  # across all namespaces


def test_unused_grants_counts_each_resource_name() -> None:
    grants = {
        Grant("", "secrets", "get", "sys", frozenset({"tls", "ca"})),
        Grant("", "pods", "list", None),
        Grant("", "events", "create", "sys"),
    }
    requests = [ApiRequest("", "secrets", "get", "sys", "tls"), ApiRequest("", "events", "create", "sys")]
    assert unused_grants(grants, requests) == {
        Grant("", "secrets", "get", "sys", frozenset({"ca"})),
        Grant("", "pods", "list", None),
    }


def test_grants_follow_role_bindings_and_refuse_wildcards() -> None:
    objects = [
        {
            "kind": "ClusterRole",
            "metadata": {"name": "read"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        },
        # A ClusterRole bound by a RoleBinding grants in that namespace only.
        {
            "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "ns1"},
            "roleRef": {"kind": "ClusterRole", "name": "read"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "sys"}],
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "other", "namespace": "ns2"},
            "roleRef": {"kind": "ClusterRole", "name": "read"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "elsewhere"}],
        },
    ]
    assert grants_for_service_account(objects, service_account="sa", namespace="sys") == {
        Grant("", "pods", "get", "ns1")
    }
    wildcard = [{**objects[0], "rules": [{"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]}]}, objects[1]]
    with pytest.raises(RbacError, match="wildcard"):
        grants_for_service_account(wildcard, service_account="sa", namespace="sys")
    dangling = [objects[1]]
    with pytest.raises(RbacError, match="missing ClusterRole read"):
        grants_for_service_account(dangling, service_account="sa", namespace="sys")


def test_every_kind_the_reconciler_owns_is_writable(defaults: Rendered) -> None:
    """A child kind added to reconciler/runtime/kinds.py without RBAC would fail at run time with Forbidden."""
    grants = grants_for_service_account(defaults.objects, service_account=RECONCILER_SA, namespace=NAMESPACE)
    for kind in CHILD_KINDS:
        for verb in CHILD_WRITES:
            assert is_allowed(grants, ApiRequest(kind.group, kind.plural, verb, "team-a", "x")), (kind.kind, verb)
    for kind in (MODEL_BOOSTER, POD):  # informers over every namespace
        for verb in ("list", "watch"):
            assert is_allowed(grants, ApiRequest(kind.group, kind.plural, verb, None)), (kind.kind, verb)
    assert is_allowed(grants, ApiRequest(MODEL_BOOSTER.group, "modelboosters/status", "patch", "team-a", "x"))
    assert is_allowed(grants, ApiRequest(EVENT.group, EVENT.plural, "create", "team-a"))
    lease = ApiRequest(LEASE.group, LEASE.plural, "update", NAMESPACE, f"{P}-reconciler")
    assert is_allowed(grants, lease)
    settings = request_from_http(
        "GET",
        CONFIG_MAP.collection_path(NAMESPACE),
        f"watch=true&fieldSelector=metadata.name%3D{P}-reconciler",
    )
    assert is_allowed(grants, settings)
