"""The PrometheusRule: off by default, strictly valid against the PrometheusRule schema, accepted by promtool,
every alert fired and resolved by promtool unit tests (alert_tests.yaml), reading only exported metrics, and
explained in the Alerts section of docs/chart.md."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tests.chart import promtool
from tests.chart.promql import documented_metrics, problems
from tests.chart.render import CHART_DIR, NAMESPACE, REPO_ROOT, Rendered, render
from tests.chart.scenarios import RUNBOOKS, SCENARIOS
from tests.e2e.documented import section
from tests.fakeapi.crds import validate_crd
from tests.fakeapi.schema import prune, validate
from webhook.metrics import LATENCY_BUCKETS

P = "mb-modelbooster"
HERE = Path(__file__).parent
UNIT_TESTS = HERE / "alert_tests.yaml"
CRD = HERE / "schemas" / "monitoring.coreos.com_prometheusrules.yaml"
DOC = REPO_ROOT / "docs" / "chart.md"
WEBHOOK_ALERTS = {
    "ModelBoosterWebhookDown",
    "ModelBoosterWebhookErrors",
    "ModelBoosterWebhookSlow",
    "ModelBoosterWebhookCertificateExpiresSoon",
}
RECONCILER_ALERTS = {
    "ModelBoosterReconcilerNoLeader",
    "ModelBoosterReconcileErrors",
    "ModelBoosterWorkQueueBacklog",
    "ModelBoostersFailed",
    "ModelBoosterCRDOutdated",
    "InfernoServerUnallocated",
    "InfernoTargetBelowDesired",
    "InfernoLoadNotMeasured",
}
RULES_ON = {"metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}}


def _rule(rendered: Rendered) -> dict[str, Any]:
    (rule,) = rendered.of_kind("PrometheusRule")
    return rule


def _alerts(rule: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {alert["alert"]: alert for group in rule["spec"]["groups"] for alert in group["rules"]}


def _crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD.read_text())
    return crd


def _schema_errors(obj: dict[str, Any]) -> list[str]:
    """What an API server with this CRD would refuse under fieldValidation=Strict: unknown fields, then
    OpenAPI violations."""
    schema = _crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    copy = json.loads(json.dumps(obj))
    unknown = [f"unknown field {path!r}" for path in prune(copy, schema)]
    return unknown + [f"{error.field}: {error.detail}" for error in validate(copy, schema, None)]


def _write_rules(rule: dict[str, Any], directory: Path) -> Path:
    # A PrometheusRule's spec is a Prometheus rule file.
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    return path


def test_no_prometheus_rule_by_default(defaults: Rendered) -> None:
    # Without the Prometheus Operator's CRD an install that rendered one would fail.
    assert defaults.of_kind("PrometheusRule") == []


def test_the_rule_refuses_to_render_without_the_service_monitors() -> None:
    with pytest.raises(helm.HelmRenderError, match=r"needs metrics\.serviceMonitor\.enabled=true"):
        render({"metrics": {"prometheusRule": {"enabled": True}}})


def test_the_vendored_schema_is_a_valid_structural_crd() -> None:
    crd = _crd()
    kubernetes_validate.validate(crd, kubernetes_validate.utils.latest_version(), strict=True)
    assert validate_crd(crd, None) == []


@pytest.mark.parametrize("scenario", ["monitoring", "everything"])
def test_rendered_rule_is_strictly_valid(rendered_scenarios: dict[str, Rendered], scenario: str) -> None:
    rule = _rule(rendered_scenarios[scenario])
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert _schema_errors(rule) == []


def test_the_strict_check_refuses_what_the_operator_would() -> None:
    # Teeth: a misplaced field, a bad duration and a rule without expr are all caught.
    rule = _rule(render(RULES_ON))
    broken = json.loads(json.dumps(rule))
    first = broken["spec"]["groups"][0]["rules"][0]
    first["severity"] = "critical"
    first["for"] = "3 minutes"
    del broken["spec"]["groups"][1]["rules"][0]["expr"]
    errors = _schema_errors(broken)
    assert any("severity" in error for error in errors), errors
    assert any("for" in error and "should match" in error for error in errors), errors
    assert any("expr" in error for error in errors), errors


@pytest.mark.parametrize("scenario", ["monitoring", "everything"])
def test_promtool_accepts_every_rule(rendered_scenarios: dict[str, Rendered], scenario: str, tmp_path: Path) -> None:
    _write_rules(_rule(rendered_scenarios[scenario]), tmp_path)
    result = promtool.run("check", "rules", "rules.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(WEBHOOK_ALERTS | RECONCILER_ALERTS)} rules found" in result.stdout


def test_promtool_unit_tests_fire_and_resolve_every_alert(tmp_path: Path) -> None:
    _write_rules(_rule(render(RULES_ON)), tmp_path)
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    result = promtool.run("test", "rules", UNIT_TESTS.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_case_that_fires_and_a_later_one_that_resolves() -> None:
    cases = yaml.safe_load(UNIT_TESTS.read_text())
    assert cases["rule_files"] == ["rules.yaml"]
    fired: dict[str, list[tuple[str, int]]] = {}
    resolved: dict[str, list[tuple[str, int]]] = {}
    for test in cases["tests"]:
        for check in test["alert_rule_test"]:
            minutes = _minutes(check["eval_time"])
            (fired if check["exp_alerts"] else resolved).setdefault(check["alertname"], []).append(
                (test["name"], minutes)
            )
    for alert in WEBHOOK_ALERTS | RECONCILER_ALERTS:
        assert alert in fired, f"no unit test makes {alert} fire"
        later = [
            (name, at)
            for name, at in resolved.get(alert, [])
            if any(name == fired_in and at > fired_at for fired_in, fired_at in fired[alert])
        ]
        assert later, f"no unit test shows {alert} resolving after it fired"


def _minutes(duration: str) -> int:
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?", duration)
    assert duration, "empty eval_time"
    assert match, f"eval_time {duration!r}: use hours and minutes"
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def test_the_unit_tests_cover_exactly_the_rendered_alerts() -> None:
    rendered = set(_alerts(_rule(render(RULES_ON))))
    assert rendered == WEBHOOK_ALERTS | RECONCILER_ALERTS
    tested = {check["alertname"] for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"]
              for check in test["alert_rule_test"]}  # fmt: skip
    assert tested == rendered


def test_every_alert_reads_only_exported_metrics_and_labels() -> None:
    documented = documented_metrics()
    for name, alert in _alerts(_rule(render(RULES_ON))).items():
        assert problems(alert["expr"], documented) == [], name


def test_every_alert_has_a_runbook_in_the_docs() -> None:
    alerts = section(DOC.read_text(), "Alerts")
    assert alerts, "docs/chart.md has no Alerts section"
    headings = re.findall(r"^#### (\S+)$", alerts, flags=re.MULTILINE)
    assert sorted(headings) == sorted(WEBHOOK_ALERTS | RECONCILER_ALERTS)
    for alert in headings:
        runbook = section(alerts, alert)
        assert "What it means" in runbook, alert
        assert "What to do" in runbook, alert


def test_alert_labels_severity_and_runbook_urls(rendered_scenarios: dict[str, Rendered]) -> None:
    default = _alerts(_rule(render(RULES_ON)))
    assert {name: alert["labels"]["severity"] for name, alert in default.items()} == {
        "ModelBoosterWebhookDown": "critical",
        "ModelBoosterWebhookErrors": "critical",
        "ModelBoosterWebhookSlow": "warning",
        "ModelBoosterWebhookCertificateExpiresSoon": "warning",
        "ModelBoosterReconcilerNoLeader": "critical",
        "ModelBoosterReconcileErrors": "warning",
        "ModelBoosterWorkQueueBacklog": "warning",
        "ModelBoostersFailed": "warning",
        "ModelBoosterCRDOutdated": "warning",
        "InfernoServerUnallocated": "warning",
        "InfernoTargetBelowDesired": "warning",
        "InfernoLoadNotMeasured": "warning",
    }
    assert all("runbook_url" not in alert["annotations"] for alert in default.values())
    tuned = _alerts(_rule(rendered_scenarios["everything"]))
    for name, alert in tuned.items():
        assert alert["labels"]["team"] == "ml"
        assert alert["annotations"]["runbook_url"] == f"{RUNBOOKS}#{name.lower()}"
    # A severity in alertLabels cannot demote a critical alert.
    overridden = render({**RULES_ON, "metrics": {**RULES_ON["metrics"], "prometheusRule": {
        "enabled": True, "alertLabels": {"severity": "info"}}}})  # fmt: skip
    assert _alerts(_rule(overridden))["ModelBoosterWebhookDown"]["labels"]["severity"] == "critical"


def test_rule_labels_let_prometheus_select_it(rendered_scenarios: dict[str, Rendered]) -> None:
    rule = _rule(rendered_scenarios["monitoring"])
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["metadata"]["namespace"] == NAMESPACE


def test_alerts_select_the_series_of_this_release_only() -> None:
    for name, alert in _alerts(_rule(render(RULES_ON))).items():
        component = "webhook" if name in WEBHOOK_ALERTS else "reconciler"
        selectors = re.findall(r"\{([^}]*)\}", alert["expr"])
        assert selectors, name
        for selector in selectors:
            assert f'namespace="{NAMESPACE}"' in selector, (name, selector)
            assert f'job="{P}-{component}-metrics"' in selector, (name, selector)


def test_without_the_webhook_only_the_reconciler_alerts() -> None:
    rule = _rule(render({**RULES_ON, "webhook": {"enabled": False}}))
    assert [group["name"] for group in rule["spec"]["groups"]] == ["modelbooster-reconciler", "modelbooster-inferno"]
    assert set(_alerts(rule)) == RECONCILER_ALERTS


def test_latency_threshold_follows_the_timeout_and_stays_measurable() -> None:
    tuned = _alerts(_rule(render({**RULES_ON, **SCENARIOS["webhook-tuned"]})))
    assert tuned["ModelBoosterWebhookSlow"]["expr"].endswith("> 12 * 0.8")
    # histogram_quantile cannot report more than the last finite bucket: the threshold for the longest
    # timeout the chart accepts must lie below it, or the alert could never fire.
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    longest = schema["properties"]["webhook"]["properties"]["timeoutSeconds"]["maximum"]
    assert longest * 0.8 < max(LATENCY_BUCKETS)


def test_certificate_threshold_follows_the_value() -> None:
    values = {"metrics": {"serviceMonitor": {"enabled": True},
                          "prometheusRule": {"enabled": True, "certificateExpiryDays": 7}}}  # fmt: skip
    expr = _alerts(_rule(render(values)))["ModelBoosterWebhookCertificateExpiresSoon"]["expr"]
    assert expr.endswith("< 7 * 86400")
