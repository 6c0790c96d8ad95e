"""The chart renders, lints and produces schema-valid objects for the defaults and every switch."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import SchemaNotFoundError

from tests.chart.render import CHART_DIR, NAMESPACE, TEST_REPOSITORY, Rendered, render, with_test_image
from tests.chart.scenarios import SCENARIOS

# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest kubernetes-validate knows.
KUBE_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version())

# Objects of other projects' CRDs, which are not installed here: kubernetes-validate has no schema for them
# and no CRD of theirs is in this repository, so their wiring is checked field by field in other tests
# (test_webhook_configuration.py for the cert-manager objects, test_metrics.py for the ServiceMonitors,
# tests/reconciler/test_engine_queries.py for the engines' PodMonitor, run by a real Prometheus);
# test_alerts.py checks the PrometheusRule against a schema of that kind kept in tests/chart/schemas.
FOREIGN_KINDS = {
    ("cert-manager.io/v1", "Issuer"),
    ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
    ("monitoring.coreos.com/v1", "PodMonitor"),
}

P = "mb-modelbooster"
DEFAULT_INVENTORY = {
    ("ServiceAccount", f"{P}-webhook"),
    ("ServiceAccount", f"{P}-reconciler"),
    ("Deployment", f"{P}-webhook"),
    ("Deployment", f"{P}-reconciler"),
    ("Service", f"{P}-webhook"),
    ("Service", f"{P}-webhook-metrics"),
    ("Service", f"{P}-reconciler-metrics"),
    ("PodDisruptionBudget", f"{P}-webhook"),
    ("MutatingWebhookConfiguration", P),
    ("ValidatingWebhookConfiguration", P),
    ("ConfigMap", f"{P}-reconciler"),
    ("ClusterRole", f"{P}-reconciler"),
    ("ClusterRoleBinding", f"{P}-reconciler"),
    # The Inferno controller's rights (Scale actuation's /scale among them) where it watches: everywhere.
    ("ClusterRole", f"{P}-reconciler-inferno"),
    ("ClusterRoleBinding", f"{P}-reconciler-inferno"),
    # Every mode: the served CRDs (which child kinds exist, and whether they are outdated) are read cluster-wide.
    ("ClusterRole", f"{P}-reconciler-crds"),
    ("ClusterRoleBinding", f"{P}-reconciler-crds"),
    ("ClusterRole", f"{P}-reconciler-webhook-ca"),
    ("ClusterRoleBinding", f"{P}-reconciler-webhook-ca"),
    # Every mode: which namespaces are being deleted (all, or the watched ones by name).
    ("ClusterRole", f"{P}-reconciler-namespaces"),
    ("ClusterRoleBinding", f"{P}-reconciler-namespaces"),
    ("Role", f"{P}-reconciler"),
    ("RoleBinding", f"{P}-reconciler"),
}
CERT_MANAGER_OBJECTS = {
    ("Issuer", f"{P}-selfsigned"),
    ("Certificate", f"{P}-ca"),
    ("Issuer", f"{P}-ca"),
    ("Certificate", f"{P}-webhook"),
}
WEBHOOK_OBJECTS = {
    ("ServiceAccount", f"{P}-webhook"),
    ("Deployment", f"{P}-webhook"),
    ("Service", f"{P}-webhook"),
    ("Service", f"{P}-webhook-metrics"),
    ("PodDisruptionBudget", f"{P}-webhook"),
    ("MutatingWebhookConfiguration", P),
    ("ValidatingWebhookConfiguration", P),
}
CA_INJECTION_RBAC = {
    ("ClusterRole", f"{P}-reconciler-webhook-ca"),
    ("ClusterRoleBinding", f"{P}-reconciler-webhook-ca"),
}


def _inventory(rendered: Rendered) -> set[tuple[str, str]]:
    names = [(obj["kind"], obj["metadata"]["name"]) for obj in rendered.objects]
    assert len(names) == len(set(names)), f"duplicate objects: {sorted(names)}"
    return set(names)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_lint_is_clean(scenario: str) -> None:
    values = with_test_image(SCENARIOS[scenario])
    report = helm.lint(CHART_DIR, values, strict=True, namespace=NAMESPACE, kube_version="v1.30.0")
    assert report["errors"] == []
    # Severity 2 is a warning, 3 an error; 1 (info: "icon is recommended") is not a defect.
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_builtin_object_is_schema_valid(
    rendered_scenarios: dict[str, Rendered], scenario: str, kube_version: str
) -> None:
    rendered = rendered_scenarios[scenario]
    assert rendered.objects
    # The webhook configurations also as the reconciler arms them, with the entries of their annotation.
    for obj in [*rendered.objects, *rendered.armed()]:
        if (obj["apiVersion"], obj["kind"]) in FOREIGN_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, kube_version, strict=True)
        except SchemaNotFoundError:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{obj['apiVersion']} {obj['kind']} is neither built in nor a known foreign kind")
        except kubernetes_validate.ValidationError as error:  # pragma: no cover
            path = "/".join(str(p) for p in error.path)
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']} at {path}: {error.message}")


def test_default_inventory(defaults: Rendered) -> None:
    assert _inventory(defaults) == DEFAULT_INVENTORY


def test_cert_manager_adds_a_ca_chain_and_drops_ca_injection_rights(rendered_scenarios: dict[str, Rendered]) -> None:
    expected = (DEFAULT_INVENTORY - CA_INJECTION_RBAC) | CERT_MANAGER_OBJECTS
    assert _inventory(rendered_scenarios["cert-manager"]) == expected


def test_an_existing_issuer_replaces_the_chart_ca(rendered_scenarios: dict[str, Rendered]) -> None:
    rendered = rendered_scenarios["cert-manager-existing-issuer"]
    assert _inventory(rendered) == (DEFAULT_INVENTORY - CA_INJECTION_RBAC) | {("Certificate", f"{P}-webhook")}
    issuer = rendered.one("Certificate", f"{P}-webhook")["spec"]["issuerRef"]
    assert issuer == {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}


def test_webhook_disabled_renders_no_webhook_objects(rendered_scenarios: dict[str, Rendered]) -> None:
    assert _inventory(rendered_scenarios["webhook-disabled"]) == DEFAULT_INVENTORY - WEBHOOK_OBJECTS - CA_INJECTION_RBAC
    assert "webhook.enabled=false" in rendered_scenarios["webhook-disabled"].notes


def test_single_webhook_replica_has_no_pdb() -> None:
    # A PDB with minAvailable 1 over one pod would block every node drain.
    assert not render({"webhook": {"replicas": 1}}).of_kind("PodDisruptionBudget")


def test_existing_service_accounts_are_used_and_not_created(rendered_scenarios: dict[str, Rendered]) -> None:
    rendered = rendered_scenarios["existing-service-accounts"]
    assert not rendered.of_kind("ServiceAccount")
    assert rendered.deployment("webhook")["spec"]["template"]["spec"]["serviceAccountName"] == "wh-sa"
    assert rendered.deployment("reconciler")["spec"]["template"]["spec"]["serviceAccountName"] == "rc-sa"
    bindings = rendered.of_kind("ClusterRoleBinding") + rendered.of_kind("RoleBinding")
    subjects = {subject["name"] for binding in bindings for subject in binding["subjects"]}
    assert subjects == {"rc-sa"}


def test_rbac_create_false_renders_no_rbac() -> None:
    kinds = {obj["kind"] for obj in render({"rbac": {"create": False}}).objects}
    assert not kinds & {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def test_namespaced_objects_are_in_the_release_namespace(rendered_scenarios: dict[str, Rendered]) -> None:
    cluster_scoped = {
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
    for name, rendered in rendered_scenarios.items():
        for obj in rendered.objects:
            namespace = obj["metadata"].get("namespace")
            if obj["kind"] in cluster_scoped:
                assert namespace is None, (name, obj["kind"])
            elif obj["kind"] not in ("Role", "RoleBinding") or obj["metadata"]["name"] == f"{P}-reconciler":
                assert namespace == NAMESPACE, (name, obj["kind"], obj["metadata"]["name"])


def test_every_object_carries_the_release_labels(rendered_scenarios: dict[str, Rendered]) -> None:
    for name, rendered in rendered_scenarios.items():
        for obj in rendered.objects:
            labels: dict[str, Any] = obj["metadata"].get("labels") or {}
            assert labels.get("app.kubernetes.io/instance") == "mb", (name, obj["kind"])
            assert labels.get("app.kubernetes.io/managed-by") == "Helm", (name, obj["kind"])
            assert labels.get("app.kubernetes.io/component") in (
                "webhook",
                "reconciler",
                "webhook-metrics",
                "reconciler-metrics",
                "monitoring",
            ), (name, obj["kind"])


def test_names_fit_kubernetes_limits_with_a_long_release_name() -> None:
    rendered = render(release="a-very-long-release-name-for-testing-the-limits-of-names")
    for obj in rendered.objects:
        assert len(obj["metadata"]["name"]) <= 63, obj["metadata"]["name"]
        for value in (obj["metadata"].get("labels") or {}).values():
            assert len(value) <= 63


def test_image_reference(rendered_scenarios: dict[str, Rendered]) -> None:
    default_image = rendered_scenarios["defaults"].deployment("reconciler")["spec"]["template"]["spec"]["containers"][0]
    app_version = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())["appVersion"]
    assert default_image["image"] == f"{TEST_REPOSITORY}:{app_version}"  # no tag set
    pinned = rendered_scenarios["everything"].deployment("reconciler")["spec"]["template"]["spec"]["containers"][0]
    assert pinned["image"] == f"{TEST_REPOSITORY}@sha256:" + "ab" * 32


@pytest.mark.parametrize(
    "values",
    [{}, {"image": {"repository": ""}}, {"image": {"tag": "0.2.0"}}, {"webhook": {"enabled": False}}],
    ids=["defaults", "empty", "tag-only", "no-webhook"],
)
def test_no_image_repository_refuses_to_render_naming_the_value(values: dict[str, Any]) -> None:
    """Nothing is published: without `image.repository` the webhooks would be registered with failurePolicy Fail
    in front of pods that cannot start, refusing every ModelBooster write (and the reconciler would never run)."""
    with pytest.raises(helm.HelmRenderError) as refused:
        render(values, with_image=False)
    message = str(refused.value)
    assert "image.repository is not set: no modelbooster image is published" in message
    assert "set image.repository=<registry>/modelbooster" in message
    assert "refuse every ModelBooster create and update" in message
    named = render({**values, "image": {**values.get("image", {}), "repository": "registry.example/mb"}},
                   with_image=False)  # fmt: skip
    assert named.deployment("reconciler")["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
        "registry.example/mb:"
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"reconciler": {"replicas": 2, "leaderElection": {"enabled": False}}}, "leaderElection.enabled=true"),
        ({"reconciler": {"watchNamespaces": [NAMESPACE]}}, "contains the release namespace"),
        ({"serviceAccount": {"create": False}}, "serviceAccount.webhookName is required"),
    ],
)
def test_contradictory_values_fail_with_a_message_naming_them(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        render(values)
