"""The values operators expect: NetworkPolicies, a reconciler PDB, Inferno off, extra volumes, Service
annotations. Each is off (or empty) by default; the scenarios render, lint and validate strictly in
test_render.py, and every value is in the generated table (test_values.py)."""

from __future__ import annotations

from typing import Any

from tests.chart.render import Rendered, container_args, render

P = "mb-modelbooster"  # the fullname of the release the tests render


def _pod_spec(rendered: Rendered, component: str) -> dict[str, Any]:
    spec: dict[str, Any] = rendered.one("Deployment", f"{P}-{component}")["spec"]["template"]["spec"]
    return spec


def test_none_of_them_changes_the_default_install(defaults: Rendered) -> None:
    assert not defaults.of_kind("NetworkPolicy")
    assert [pdb["metadata"]["name"] for pdb in defaults.of_kind("PodDisruptionBudget")] == [f"{P}-webhook"]
    assert "--no-inferno" not in container_args(defaults.one("Deployment", f"{P}-reconciler"), "reconciler")
    assert [v["name"] for v in _pod_spec(defaults, "webhook")["volumes"]] == ["tls", "tmp"]
    assert all("annotations" not in service["metadata"] for service in defaults.of_kind("Service"))


def test_network_policies_let_the_api_server_reach_the_webhook_and_prometheus_the_metrics(
    rendered_scenarios: dict[str, Rendered],
) -> None:
    rendered = rendered_scenarios["network-policy"]
    webhook = rendered.one("NetworkPolicy", f"{P}-webhook")["spec"]
    assert webhook["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "webhook"
    assert webhook["policyTypes"] == ["Ingress"]
    admission, metrics = webhook["ingress"]
    assert admission == {"ports": [{"port": 8443, "protocol": "TCP"}], "from": [{"ipBlock": {"cidr": "172.16.0.0/28"}}]}
    prometheus = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    assert metrics == {"ports": [{"port": 8080, "protocol": "TCP"}], "from": [prometheus]}
    reconciler = rendered.one("NetworkPolicy", f"{P}-reconciler")["spec"]
    assert reconciler["ingress"] == [{"ports": [{"port": 8080, "protocol": "TCP"}], "from": [prometheus]}]


def test_empty_peers_mean_from_anywhere_on_that_port_only() -> None:
    rendered = render({"networkPolicy": {"enabled": True, "metricsFrom": []}})
    admission, metrics = rendered.one("NetworkPolicy", f"{P}-webhook")["spec"]["ingress"]
    assert "from" not in admission
    assert "from" not in metrics


def test_the_reconciler_gets_a_pdb_only_with_standbys(rendered_scenarios: dict[str, Rendered]) -> None:
    pdb = rendered_scenarios["high-availability"].one("PodDisruptionBudget", f"{P}-reconciler")["spec"]
    assert pdb["minAvailable"] == 1
    assert pdb["selector"]["matchLabels"]["app.kubernetes.io/component"] == "reconciler"
    without = render({"reconciler": {"replicas": 2, "pdb": {"enabled": False}}}).of_kind("PodDisruptionBudget")
    assert [pdb["metadata"]["name"] for pdb in without] == [f"{P}-webhook"]


def test_inferno_off_stops_its_controller_and_drops_its_crds_and_rights(
    rendered_scenarios: dict[str, Rendered],
) -> None:
    rendered = rendered_scenarios["no-inferno"]
    assert "--no-inferno" in container_args(rendered.one("Deployment", f"{P}-reconciler"), "reconciler")
    assert not [crd for crd in rendered.crds if crd["spec"]["group"] == "inferno.platform.ai"]
    rules = [rule for role in rendered.of_kind("ClusterRole") for rule in role.get("rules") or []]
    assert rules
    assert not [rule for rule in rules if "inferno.platform.ai" in rule.get("apiGroups", [])]


def test_extra_volumes_mounts_and_service_annotations(rendered_scenarios: dict[str, Rendered]) -> None:
    rendered = rendered_scenarios["extra-volumes-and-annotations"]
    webhook = _pod_spec(rendered, "webhook")
    assert webhook["volumes"][-1] == {"name": "corp-ca", "configMap": {"name": "corp-ca"}}
    assert webhook["containers"][0]["volumeMounts"][-1] == {
        "name": "corp-ca",
        "mountPath": "/etc/corp-ca",
        "readOnly": True,
    }
    reconciler = _pod_spec(rendered, "reconciler")
    assert reconciler["volumes"][-1]["secret"] == {"secretName": "remote-kubeconfig"}
    assert reconciler["containers"][0]["volumeMounts"][-1]["mountPath"] == "/etc/kube"
    assert rendered.one("Service", f"{P}-webhook")["metadata"]["annotations"] == {"example.com/mesh": "off"}
    for component in ("webhook", "reconciler"):
        service = rendered.one("Service", f"{P}-{component}-metrics")
        assert service["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
