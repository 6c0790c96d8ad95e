"""Metrics on the plain-HTTP port change as requests arrive, under controller-runtime's names."""

from __future__ import annotations

from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from tests.webhook.conftest import TlsFiles, Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import MUTATE_PATH, VALIDATE_PATH
from webhook.metrics import WebhookMetrics


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_request_and_decision_metrics_follow_the_traffic(webhook: Webhook) -> None:
    before = _samples(await webhook.metrics())
    for _ in range(3):
        await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=single_vllm()))
    await webhook.admit(MUTATE_PATH, review(operation="CREATE", obj=single_vllm()))
    await webhook.admit(VALIDATE_PATH, review(operation="DELETE", obj=None, old=single_vllm()))
    status, _ = await webhook.post(VALIDATE_PATH, {"not": "a review"})
    assert status == 400
    async with webhook.session.get(webhook.base + VALIDATE_PATH) as response:
        assert response.status == 405
    after = _samples(await webhook.metrics())

    def delta(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    requests = "controller_runtime_webhook_requests_total"
    assert delta(requests, webhook=VALIDATE_PATH, code="200") == 4
    assert delta(requests, webhook=VALIDATE_PATH, code="400") == 1
    assert delta(requests, webhook=VALIDATE_PATH, code="405") == 1
    assert delta(requests, webhook=MUTATE_PATH, code="200") == 1
    latency = "controller_runtime_webhook_latency_seconds_count"
    assert delta(latency, webhook=VALIDATE_PATH) == 6
    assert delta(latency, webhook=MUTATE_PATH) == 1
    decisions = "modelbooster_admission_decisions_total"
    assert delta(decisions, webhook=VALIDATE_PATH, operation="CREATE", allowed="true") == 3
    assert delta(decisions, webhook=VALIDATE_PATH, operation="DELETE", allowed="true") == 1
    assert delta(decisions, webhook=MUTATE_PATH, operation="CREATE", allowed="true") == 1
    assert _value(after, "controller_runtime_webhook_requests_in_flight", webhook=VALIDATE_PATH) == 0


async def test_denials_are_counted_as_not_allowed(webhook: Webhook) -> None:
    sent = review(operation="CREATE", obj={**single_vllm(), "spec": {"rateLimit": {"tokens": 10}}})
    response = await webhook.admit(VALIDATE_PATH, sent)
    assert response["allowed"] is False
    samples = _samples(await webhook.metrics())
    assert (
        _value(
            samples,
            "modelbooster_admission_decisions_total",
            webhook=VALIDATE_PATH,
            operation="CREATE",
            allowed="false",
        )
        == 1
    )


async def test_latency_histogram_uses_the_go_default_buckets(webhook: Webhook) -> None:
    text = await webhook.metrics()
    buckets = sorted(
        float(sample.labels["le"])
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "controller_runtime_webhook_latency_seconds_bucket"
        and sample.labels["webhook"] == VALIDATE_PATH
    )
    assert buckets == [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, float("inf")]


async def test_process_and_certificate_metrics_are_exposed(webhook: Webhook, tls: TlsFiles) -> None:
    samples = _samples(await webhook.metrics())
    assert _value(samples, "process_resident_memory_bytes") > 0
    assert _value(samples, "python_info", **_python_info_labels(samples)) == 1
    serving = x509.load_pem_x509_certificate(tls.cert_file.read_bytes())
    assert _value(samples, "modelbooster_webhook_certificate_expiry_timestamp_seconds") == (
        serving.not_valid_after_utc.timestamp()
    )
    assert _value(samples, "modelbooster_webhook_certificate_reloads_total", result="loaded") == 1
    assert _value(samples, "modelbooster_webhook_certificate_reloads_total", result="failed") == 0


def _python_info_labels(samples: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> dict[str, str]:
    for name, labels in samples:
        if name == "python_info":
            return dict(labels)
    raise AssertionError("python_info missing")


def test_each_app_has_its_own_registry() -> None:
    first, second = WebhookMetrics(), WebhookMetrics()
    first.for_path(VALIDATE_PATH).decision(operation="CREATE", allowed=True)
    labels = {"webhook": VALIDATE_PATH, "operation": "CREATE", "allowed": "true"}
    assert first.registry.get_sample_value("modelbooster_admission_decisions_total", labels) == 1
    assert second.registry.get_sample_value("modelbooster_admission_decisions_total", labels) is None


async def test_metrics_are_not_served_on_the_tls_port(webhook: Webhook) -> None:
    async with webhook.session.get(webhook.base + "/metrics") as response:
        assert response.status == 404
