"""Metrics reach Prometheus: Services and ServiceMonitors point at the metrics ports, and the metric lists in
docs/chart.md and docs/reconciler.md are the lists the processes export.

The reconciler's registry is assembled the way `modelbooster reconciler` assembles it from the chart's own
arguments (reconciler/main.py): Metrics(), the ModelBooster controller, then the certificate duty and the
Inferno controller, which register their metrics on the same registry when they are set up. Nothing is
started, so no request is made.
"""

from __future__ import annotations

import os
import re

import pytest
from prometheus_client import CollectorRegistry

from tests.chart.registries import reconciler_registry
from tests.chart.render import NAMESPACE, REPO_ROOT, Rendered, render, selector_matches
from tests.e2e.documented import section, table_metric_names
from webhook.metrics import WebhookMetrics

P = "mb-modelbooster"
DOCS = REPO_ROOT / "docs"
DOC = DOCS / "chart.md"
# The certificate duty's metrics, exported only in the default certificate mode (no cert-manager).
CERT_DUTY_METRICS = {
    "modelbooster_cabundle_injections_total",
    "modelbooster_certificates_issued_total",
    "modelbooster_certificate_secret_repairs_total",
    "modelbooster_certificate_sync_errors_total",
    "modelbooster_certificate_expiry_timestamp_seconds",
}
INFERNO_METRICS = {
    "inferno_optimizations_total",
    "inferno_optimization_duration_seconds",
    "inferno_desired_alloc_writes_total",
    "inferno_remote_requests_total",
    "inferno_load_measurement_failures_total",
    "inferno_scale_changes_total",
}


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


def _types(registry: CollectorRegistry) -> dict[str, str]:
    return {
        f"{family.name}_total" if family.type == "counter" else family.name: family.type
        for family in registry.collect()
    }


@pytest.fixture
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The processes read MODELBOOSTER_* and INFERNO_* variables as defaults; only the chart's arguments count.
    for name in list(os.environ):
        if name.startswith(("MODELBOOSTER_", "INFERNO_")):
            monkeypatch.delenv(name)


def test_docs_list_exactly_the_webhook_metrics() -> None:
    assert _documented("Webhook metrics") == _exported(WebhookMetrics().registry)


@pytest.mark.usefixtures("_no_settings_from_the_environment")
async def test_docs_list_exactly_the_reconciler_metrics(defaults: Rendered) -> None:
    exported = _exported(await reconciler_registry(defaults))
    # Teeth: the assembly above really includes what the duties register later than Metrics().
    assert CERT_DUTY_METRICS | INFERNO_METRICS | {"modelbooster_boosters"} <= exported
    assert _documented("Reconciler metrics") == exported


@pytest.mark.usefixtures("_no_settings_from_the_environment")
async def test_reconciler_docs_agree_with_the_exported_types(defaults: Rendered) -> None:
    types = _types(await reconciler_registry(defaults))
    for document, heading in (("chart.md", "Reconciler metrics"), ("reconciler.md", "Metrics")):
        documented = table_metric_names(section((DOCS / document).read_text(), heading))
        assert set(documented) == set(types) - {n for n in types if n.startswith(("process_", "python_"))}, document
        wrong = {name: (kind, types[name]) for name, kind in documented.items() if kind and kind != types[name]}
        assert wrong == {}, f"{document}: documented type differs from the exported one"


@pytest.mark.usefixtures("_no_settings_from_the_environment")
async def test_without_the_duties_their_metrics_are_not_exported(rendered_scenarios: dict[str, Rendered]) -> None:
    """cert-manager mode turns the certificate duty off (--no-cert-duty): the docs say those metrics are for
    the default mode only."""
    exported = _exported(await reconciler_registry(rendered_scenarios["cert-manager"]))
    assert not exported & CERT_DUTY_METRICS
    assert exported >= INFERNO_METRICS
