"""Both `/metrics` endpoints, scraped like Prometheus would, against what docs/chart.md, docs/reconciler.md
(and docs/webhook.md once it exists) promise: every documented metric is exported with its documented type
and has series, and the series move when a user does something."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

import pytest
from cryptography import x509
from kubernetes.client import ApiException

from tests.chart.render import NAMESPACE
from tests.e2e.documented import Sample, documented_metrics, family_of, parse_exposition, samples_of
from tests.e2e.harness import FULLNAME, TLS_SECRET, Cluster
from tests.e2e.user import create_booster, delete_booster, load_example, mark_serving, wait_condition

# Documented series that a calm run legitimately leaves without samples (each has labels whose values
# appear only with the event), with the reason. Everything else documented must have at least one sample.
EVENT_ONLY: dict[str, str] = {
    "modelbooster_watch_restarts_total": "a watch is re-opened only after its 300 s timeout or a fault",
    "modelbooster_event_post_failures_total": "only a failed Event post counts (tests/reconciler/test_outage.py)",
    "inferno_remote_requests_total": "only a remote optimizer (INFERNO_HOST) is called; e2e runs the embedded one",
    "inferno_allocation_cost": "set by an Inferno optimisation run, which the e2e round trip does not ask for",
    "modelbooster_fields_not_served_total": "counted when a served child CRD lacks a field we write; e2e installs ours",
    **{
        name: "per Server, set by an Inferno run, which the e2e round trip does not ask for"
        for name in (
            "inferno_desired_replicas",
            "inferno_load_arrival_rate",
            "inferno_load_avg_length",
            "inferno_predicted_itl_seconds",
            "inferno_server_unallocated",
        )
    },
    **{
        name: "per targeted Server (targetRef); the e2e Servers target nothing"
        for name in (
            "inferno_current_replicas",
            "inferno_load_stale",
            "inferno_scale_blocked",
            "inferno_saturation_pressure",
            "inferno_profile_drift",
        )
    },
    "inferno_load_measurement_failures_total": "counted by reason only when a measurement fails",
}


def _value(samples: list[Sample], metric: str, /, **labels: str) -> float:
    """The sum over the series of `metric` whose labels include `labels` (a label may be called `name`)."""
    return sum(s.value for s in samples if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items()))


def _scrape(cluster: Cluster, process: str) -> tuple[dict[str, str], list[Sample]]:
    return parse_exposition(cluster.scrape(process))


@pytest.fixture(scope="module")
def activity(cluster: Cluster) -> Iterator[dict[str, list[Sample]]]:
    """Metrics before a user's round trip (create, Active, a refusal, delete); returns the 'before' samples."""
    before = {process: _scrape(cluster, process)[1] for process in ("webhook", "reconciler")}
    document = load_example("single-vllm-cpu.yaml")
    document["metadata"].update(name="metrics-probe", namespace="e2e")
    create_booster(cluster, document)
    wait_condition(cluster, "e2e", "metrics-probe", "Initialized", "True")
    mark_serving(cluster, "e2e", "metrics-probe-cpu", available=True, replicas=1)
    wait_condition(cluster, "e2e", "metrics-probe", "Active", "True")
    refused = load_example("invalid/mindie-backend.yaml")
    refused["metadata"].update(name="metrics-refused", namespace="e2e")
    with pytest.raises(ApiException):
        create_booster(cluster, refused)
    yield before
    delete_booster(cluster, "e2e", "metrics-probe")


def test_the_docs_are_read() -> None:
    # Hand-picked names from the docs' tables: proves the table parser finds what a reader sees.
    webhook = documented_metrics("webhook")["chart.md"]
    assert {"controller_runtime_webhook_requests_total", "modelbooster_admission_decisions_total"} <= set(webhook)
    assert webhook["controller_runtime_webhook_latency_seconds"] == "histogram"
    reconciler = documented_metrics("reconciler")
    assert {"controller_runtime_reconcile_total", "leader_election_master_status"} <= set(reconciler["chart.md"])
    # The two documents describe the same process: they must list the same metrics.
    assert set(reconciler["chart.md"]) == set(reconciler["reconciler.md"])


@pytest.mark.parametrize("process", ["webhook", "reconciler"])
def test_every_documented_metric_is_exported(cluster: Cluster, activity: dict[str, list[Sample]], process: str) -> None:
    types, samples = _scrape(cluster, process)
    problems = []
    for document, names in documented_metrics(process).items():
        for name, documented_type in sorted(names.items()):
            family = family_of(name, types)
            if family is None:
                problems.append(f"{document}: {name} is not exported")
                continue
            if documented_type is not None and types[family] != documented_type:
                problems.append(f"{document}: {name} is a {types[family]}, documented as {documented_type}")
            if not samples_of(family, types[family], samples) and name not in EVENT_ONLY:
                problems.append(f"{document}: {name} has no series")
    assert problems == []


def _delta(before: list[Sample], after: list[Sample]) -> Callable[..., float]:
    def delta(metric: str, /, **labels: str) -> float:
        return _value(after, metric, **labels) - _value(before, metric, **labels)

    return delta


def test_webhook_series_follow_admissions(cluster: Cluster, activity: dict[str, list[Sample]]) -> None:
    _, after = _scrape(cluster, "webhook")
    delta = _delta(activity["webhook"], after)
    for path in ("/mutate/modelbooster", "/validate/modelbooster"):
        assert delta("controller_runtime_webhook_requests_total", webhook=path, code="200") >= 1
        assert delta("controller_runtime_webhook_latency_seconds_count", webhook=path) >= 1
    validate = {"webhook": "/validate/modelbooster", "operation": "CREATE"}
    assert delta("modelbooster_admission_decisions_total", allowed="true", **validate) >= 1
    assert delta("modelbooster_admission_decisions_total", allowed="false", **validate) >= 1
    assert delta("modelbooster_admission_denials_total", webhook="/validate/modelbooster", reason="Invalid") >= 1
    assert _value(after, "modelbooster_webhook_ready") == 1
    assert _value(after, "controller_runtime_webhook_requests_in_flight") == 0
    assert _value(after, "modelbooster_webhook_certificate_reloads_total", result="loaded") >= 1
    # The expiry gauge is the notAfter of the certificate the kubelet projected from the Secret.
    secret = cluster.get("v1", "secrets", TLS_SECRET, NAMESPACE)
    assert secret is not None
    served = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    assert _value(after, "modelbooster_webhook_certificate_expiry_timestamp_seconds") == pytest.approx(
        served.not_valid_after_utc.timestamp()
    )


def test_reconciler_series_follow_reconciles(cluster: Cluster, activity: dict[str, list[Sample]]) -> None:
    _, after = _scrape(cluster, "reconciler")
    delta = _delta(activity["reconciler"], after)
    assert delta("controller_runtime_reconcile_total", controller="modelbooster", result="success") >= 2
    assert delta("controller_runtime_reconcile_time_seconds_count", controller="modelbooster") >= 2
    assert delta("workqueue_adds_total", name="modelbooster") >= 1
    for kind in ("ModelServing", "ModelServer", "ModelRoute"):
        assert delta("modelbooster_children_applied_total", kind=kind, action="created") >= 1
    assert _value(after, "leader_election_master_status", name=f"{FULLNAME}-reconciler") == 1
    assert _value(after, "modelbooster_boosters", condition="Active") >= 1
    assert delta("modelbooster_time_to_initialized_seconds_count") >= 1
    assert delta("rest_client_requests_total", method="POST", host=cluster.fake.url.removeprefix("http://")) >= 3
    assert _value(after, "controller_runtime_max_concurrent_reconciles", controller="modelbooster") == 5
