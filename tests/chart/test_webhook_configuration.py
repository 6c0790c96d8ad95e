"""The webhook configurations reach the webhook pods (regression test for Kthena's Q1) in both cert modes.

Kthena v0.1.0's chart named the wrong group and resource, paths the server did not register, and a Service
that selected no pod, so no webhook ever ran. Each link of the chain is checked here: rule -> path ->
Service -> selector -> pod -> container port -> the port the process listens on.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.render import (
    ENTRIES_ANNOTATION,
    NAMESPACE,
    Rendered,
    container_args,
    flag_value,
    render,
    selector_matches,
    webhook_entries,
)
from tests.chart.scenarios import SCENARIOS

P = "mb-modelbooster"
# Written from docs/design/webhook.md §1, not from the chart.
EXPECTED_RULES = [
    {
        "apiGroups": ["workload.serving.volcano.sh"],
        "apiVersions": ["v1alpha1"],
        "resources": ["modelboosters"],
        "operations": ["CREATE", "UPDATE"],
        "scope": "Namespaced",
    }
]
EXPECTED_PATHS = {
    "MutatingWebhookConfiguration": "/mutate/modelbooster",
    "ValidatingWebhookConfiguration": "/validate/modelbooster",
}
WEBHOOK_SCENARIOS = sorted(name for name, values in SCENARIOS.items() if values.get("webhook", {}).get("enabled", True))
SELF_SIGNED_SCENARIOS = [
    name for name in WEBHOOK_SCENARIOS if not SCENARIOS[name].get("certManager", {}).get("enabled", False)
]


def _webhooks(rendered: Rendered) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for kind in EXPECTED_PATHS:
        configurations = rendered.of_kind(kind)
        assert len(configurations) == 1, kind
        webhooks = webhook_entries(configurations[0])
        assert len(webhooks) == 1, kind
        found.append((kind, webhooks[0]))
    return found


def _pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


@pytest.mark.parametrize("scenario", WEBHOOK_SCENARIOS)
def test_rules_and_paths_name_the_real_resource(rendered_scenarios: dict[str, Rendered], scenario: str) -> None:
    for kind, webhook in _webhooks(rendered_scenarios[scenario]):
        assert webhook["rules"] == EXPECTED_RULES, kind
        assert webhook["clientConfig"]["service"]["path"] == EXPECTED_PATHS[kind]
        assert webhook["sideEffects"] == "None"
        assert webhook["admissionReviewVersions"] == ["v1"]
        # A webhook name must be a fully qualified domain name with at least three segments.
        assert webhook["name"].count(".") >= 2
        assert "url" not in webhook["clientConfig"]


@pytest.mark.parametrize("scenario", WEBHOOK_SCENARIOS)
def test_the_service_selects_webhook_pods_on_the_port_they_serve(
    rendered_scenarios: dict[str, Rendered], scenario: str
) -> None:
    rendered = rendered_scenarios[scenario]
    deployment = rendered.deployment("webhook")
    pod_labels = _pod_labels(deployment)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    listen_port = int(flag_value(container_args(deployment, "webhook"), "--port") or 0)
    for kind, webhook in _webhooks(rendered):
        ref = webhook["clientConfig"]["service"]
        assert ref["namespace"] == NAMESPACE, kind
        service = rendered.one("Service", ref["name"])
        assert service["metadata"]["namespace"] == NAMESPACE
        # The selector must pick the webhook pods and only them.
        assert selector_matches({"matchLabels": service["spec"]["selector"]}, pod_labels), kind
        reconciler_labels = _pod_labels(rendered.deployment("reconciler"))
        assert not selector_matches({"matchLabels": service["spec"]["selector"]}, reconciler_labels)
        (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == ref["port"]]
        target = service_port["targetPort"]
        (container_port,) = [p for p in container["ports"] if target in (p["name"], p["containerPort"])]
        assert container_port["containerPort"] == listen_port == 8443


def test_failure_policy_and_timeout_default_to_fail_and_5_seconds(defaults: Rendered) -> None:
    for kind, webhook in _webhooks(defaults):
        assert (webhook["failurePolicy"], webhook["timeoutSeconds"]) == ("Fail", 5), kind


def test_failure_policy_and_timeout_follow_the_values(rendered_scenarios: dict[str, Rendered]) -> None:
    for kind, webhook in _webhooks(rendered_scenarios["webhook-tuned"]):
        assert (webhook["failurePolicy"], webhook["timeoutSeconds"]) == ("Ignore", 12), kind


def _ns(name: str, **labels: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": name, **labels}


def test_namespace_selector_excludes_the_release_namespace_and_kube_system(defaults: Rendered) -> None:
    for kind, webhook in _webhooks(defaults):
        selector = webhook["namespaceSelector"]
        assert not selector_matches(selector, _ns(NAMESPACE)), kind
        assert not selector_matches(selector, _ns("kube-system")), kind
        assert selector_matches(selector, _ns("default")), kind
        assert selector_matches(selector, _ns("team-x", env="prod")), kind


def test_namespace_selector_follows_the_watched_namespaces(rendered_scenarios: dict[str, Rendered]) -> None:
    for kind, webhook in _webhooks(rendered_scenarios["namespaces"]):
        selector = webhook["namespaceSelector"]
        assert selector_matches(selector, _ns("team-a")), kind
        assert selector_matches(selector, _ns("team-b")), kind
        assert not selector_matches(selector, _ns("default")), kind
        assert not selector_matches(selector, _ns("kube-system")), kind


def test_extra_namespace_selector_expressions_are_added() -> None:
    expression = {"key": "modelbooster-admission", "operator": "NotIn", "values": ["off"]}
    rendered = render({"webhook": {"namespaceSelectorExpressions": [expression]}})
    for kind, webhook in _webhooks(rendered):
        selector = webhook["namespaceSelector"]
        assert not selector_matches(selector, _ns("team-a", **{"modelbooster-admission": "off"})), kind
        assert selector_matches(selector, _ns("team-a")), kind
        assert not selector_matches(selector, _ns(NAMESPACE)), kind


@pytest.mark.parametrize("scenario", WEBHOOK_SCENARIOS)
def test_ca_bundle_is_never_rendered(rendered_scenarios: dict[str, Rendered], scenario: str) -> None:
    # An empty caBundle in the template would make each `helm upgrade` erase the injected one.
    for kind, webhook in _webhooks(rendered_scenarios[scenario]):
        assert "caBundle" not in webhook["clientConfig"], kind


def _mounted_tls_secret(rendered: Rendered) -> str:
    deployment = rendered.deployment("webhook")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = container_args(deployment, "webhook")
    cert_dir = (flag_value(args, "--tls-cert-file") or "").rsplit("/", 1)[0]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == cert_dir]
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["optional"] is True  # pods start before the certificate exists
    secret_name: str = volume["secret"]["secretName"]
    return secret_name


def test_self_signed_mode_mounts_the_secret_the_reconciler_writes(defaults: Rendered) -> None:
    assert _mounted_tls_secret(defaults) == f"{P}-webhook-tls"
    for kind, webhook in _webhooks(defaults):
        assert set(defaults.one(kind, P)["metadata"]["annotations"]) == {ENTRIES_ANNOTATION}
        assert "caBundle" not in webhook["clientConfig"]
    # The chart does not create the Secret: the reconciler does, and a chart-made one would be overwritten
    # by every upgrade.
    assert not defaults.of_kind("Secret")


@pytest.mark.parametrize("scenario", ["cert-manager", "cert-manager-existing-issuer", "everything"])
def test_cert_manager_mode_wires_certificate_secret_and_injection(
    rendered_scenarios: dict[str, Rendered], scenario: str
) -> None:
    rendered = rendered_scenarios[scenario]
    certificate = rendered.one("Certificate", f"{P}-webhook")
    for kind in EXPECTED_PATHS:
        annotations = rendered.one(kind, P)["metadata"]["annotations"]
        assert annotations == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{P}-webhook"}
    assert certificate["metadata"]["namespace"] == NAMESPACE
    assert certificate["spec"]["secretName"] == _mounted_tls_secret(rendered)
    assert f"{P}-webhook.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    assert "server auth" in certificate["spec"]["usages"]


def test_cert_manager_issues_the_serving_certificate_from_a_ca_it_keeps(
    rendered_scenarios: dict[str, Rendered],
) -> None:
    rendered = rendered_scenarios["cert-manager"]
    ca = rendered.one("Certificate", f"{P}-ca")
    assert ca["spec"]["isCA"] is True
    assert ca["spec"]["issuerRef"]["name"] == rendered.one("Issuer", f"{P}-selfsigned")["metadata"]["name"]
    assert "selfSigned" in rendered.one("Issuer", f"{P}-selfsigned")["spec"]
    ca_issuer = rendered.one("Issuer", f"{P}-ca")
    assert ca_issuer["spec"]["ca"]["secretName"] == ca["spec"]["secretName"]
    serving = rendered.one("Certificate", f"{P}-webhook")
    assert serving["spec"]["issuerRef"] == {"name": f"{P}-ca", "kind": "Issuer", "group": "cert-manager.io"}
    # The webhook pods must not hold the CA key.
    assert serving["spec"]["secretName"] != ca["spec"]["secretName"]


def test_tls_min_version_reaches_the_process(rendered_scenarios: dict[str, Rendered]) -> None:
    for scenario, expected in (("defaults", "1.2"), ("webhook-tuned", "1.3")):
        args = container_args(rendered_scenarios[scenario].deployment("webhook"), "webhook")
        assert flag_value(args, "--tls-min-version") == expected


@pytest.mark.parametrize("scenario", SELF_SIGNED_SCENARIOS)
def test_self_signed_mode_renders_the_configurations_unarmed(
    rendered_scenarios: dict[str, Rendered], scenario: str
) -> None:
    # Enforced only once the reconciler writes the entries, when a webhook pod is ready (docs/design/webhook.md
    # §7); rendering no `webhooks` at all also keeps Helm from ever touching them (or their caBundle) again.
    rendered = rendered_scenarios[scenario]
    reconciler_args = container_args(rendered.deployment("reconciler"), "reconciler")
    assert "--cert-duty" in reconciler_args
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = rendered.one(kind, flag_value(reconciler_args, "--webhook-configuration") or "")
        assert "webhooks" not in configuration
        assert ENTRIES_ANNOTATION in configuration["metadata"]["annotations"]


@pytest.mark.parametrize("scenario", ["cert-manager", "cert-manager-existing-issuer", "everything"])
def test_cert_manager_mode_renders_the_entries(rendered_scenarios: dict[str, Rendered], scenario: str) -> None:
    # cert-manager's cainjector injects into entries that exist; no reconciler duty arms them.
    rendered = rendered_scenarios[scenario]
    assert "--no-cert-duty" in container_args(rendered.deployment("reconciler"), "reconciler")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (configuration,) = rendered.of_kind(kind)
        assert len(configuration["webhooks"]) == 1
        assert ENTRIES_ANNOTATION not in configuration["metadata"]["annotations"]
