"""Metrics reach Prometheus: Services and ServiceMonitors point at the metrics ports, and the metric list in
docs/chart.md is the list the processes export."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry

from reconciler.metrics import Metrics
from tests.chart.render import NAMESPACE, REPO_ROOT, Rendered, render, selector_matches
from webhook.metrics import WebhookMetrics

P = "mb-modelbooster"
DOC = REPO_ROOT / "docs" / "chart.md"
# Registered when the ModelBooster controller is set up (reconciler/booster.py), not by Metrics().
REGISTERED_AT_SETUP = {"modelbooster_boosters"}


@pytest.mark.parametrize("component", ["webhook", "reconciler"])
def test_metrics_service_targets_the_metrics_port_of_its_pods(defaults: Rendered, component: str) -> None:
    service = defaults.one("Service", f"{P}-{component}-metrics")
    deployment = defaults.deployment(component)
    assert selector_matches(
        {"matchLabels": service["spec"]["selector"]}, deployment["spec"]["template"]["metadata"]["labels"]
    )
    (port,) = service["spec"]["ports"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert port["targetPort"] in {p["name"] for p in container["ports"]}
    assert port["name"] == "metrics"


def test_service_monitors_select_only_the_metrics_services(rendered_scenarios: dict[str, Rendered]) -> None:
    rendered = rendered_scenarios["service-monitor"]
    monitors = {m["metadata"]["name"]: m for m in rendered.of_kind("ServiceMonitor")}
    assert set(monitors) == {f"{P}-webhook", f"{P}-reconciler"}
    services = rendered.of_kind("Service")
    for component in ("webhook", "reconciler"):
        monitor = monitors[f"{P}-{component}"]
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["labels"]["release"] == "prometheus"
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
        picked = [
            s["metadata"]["name"]
            for s in services
            if selector_matches(monitor["spec"]["selector"], s["metadata"]["labels"])
        ]
        assert picked == [f"{P}-{component}-metrics"]  # never the HTTPS admission Service
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["port"] == "metrics"
        assert endpoint["path"] == "/metrics"
        assert endpoint["scheme"] == "http"


def test_service_monitors_are_off_by_default(defaults: Rendered) -> None:
    # Without the Prometheus Operator's CRD an install that rendered them would fail.
    assert defaults.of_kind("ServiceMonitor") == []


def test_no_webhook_no_webhook_monitor(rendered_scenarios: dict[str, Rendered]) -> None:
    monitors = [m["metadata"]["name"] for m in rendered_scenarios["everything"].of_kind("ServiceMonitor")]
    assert monitors == [f"{P}-webhook", f"{P}-reconciler"]
    without = render({"webhook": {"enabled": False}, "metrics": {"serviceMonitor": {"enabled": True}}})
    assert [m["metadata"]["name"] for m in without.of_kind("ServiceMonitor")] == [f"{P}-reconciler"]


def _exported(registry: CollectorRegistry) -> set[str]:
    names = set()
    for family in registry.collect():
        if family.name.startswith(("process_", "python_")):
            continue  # the client's standard collectors, documented as a group
        names.add(f"{family.name}_total" if family.type == "counter" else family.name)
    return names


def _documented(section: str) -> set[str]:
    text = DOC.read_text()
    match = re.search(rf"^### {section}\n(.*?)(?=^#)", text, flags=re.DOTALL | re.MULTILINE)
    assert match, f"docs/chart.md has no '### {section}' section"
    return set(re.findall(r"^\| `([a-z_]+)` \|", match.group(1), flags=re.MULTILINE))


def test_docs_list_exactly_the_webhook_metrics() -> None:
    assert _documented("Webhook metrics") == _exported(WebhookMetrics().registry)


def test_docs_list_exactly_the_reconciler_metrics() -> None:
    assert _documented("Reconciler metrics") == _exported(Metrics().registry) | REGISTERED_AT_SETUP
