"""Metrics on the plain-HTTP port change as requests arrive, under controller-runtime's names."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from tests.webhook.conftest import ServerFactory, TlsFiles, Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook import admission
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


async def test_denials_are_counted_as_not_allowed_and_by_reason(webhook: Webhook) -> None:
    sent = review(operation="CREATE", obj={**single_vllm(), "spec": {"rateLimit": {"tokens": 10}}})
    response = await webhook.admit(VALIDATE_PATH, sent)
    assert response["allowed"] is False
    wrong_kind = review(operation="CREATE", obj=single_vllm())
    wrong_kind["request"]["kind"] = {"group": "", "version": "v1", "kind": "Pod"}
    assert (await webhook.admit(MUTATE_PATH, wrong_kind))["status"]["reason"] == "BadRequest"
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
    denials = "modelbooster_admission_denials_total"
    assert _value(samples, denials, webhook=VALIDATE_PATH, reason="Invalid") == 1
    assert _value(samples, denials, webhook=MUTATE_PATH, reason="BadRequest") == 1
    # Every reason has a series from the start, so rate() and alerts see zeros rather than nothing.
    for path in (MUTATE_PATH, VALIDATE_PATH):
        series = frozenset({("webhook", path), ("reason", "InternalError")})
        assert (denials, series) in samples


async def test_internal_errors_are_counted_as_internal_error_denials(
    webhook: Webhook, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> list[object]:
        raise RuntimeError("a defect")

    monkeypatch.setattr(admission, "validate_modelbooster", broken)
    response = await webhook.admit(VALIDATE_PATH, review(operation="CREATE", obj=single_vllm()))
    assert response["status"]["reason"] == "InternalError"
    samples = _samples(await webhook.metrics())
    assert _value(samples, "modelbooster_admission_denials_total", webhook=VALIDATE_PATH, reason="InternalError") == 1
    # The HTTP answer is still 200: only the denial counter tells a 5xx-like failure happened.
    assert _value(samples, "controller_runtime_webhook_requests_total", webhook=VALIDATE_PATH, code="200") == 1


async def test_ready_gauge_follows_readyz(
    start_server: ServerFactory, session: aiohttp.ClientSession, tls: TlsFiles
) -> None:
    tls.cert_file.unlink()
    tls.key_file.unlink()
    webhook = Webhook(server=await start_server(), session=session)
    assert _value(_samples(await webhook.metrics()), "modelbooster_webhook_ready") == 0
    tls.issue()
    for _ in range(500):
        async with session.get(webhook.metrics_base + "/readyz") as response:
            if response.status == 200:
                break
        await asyncio.sleep(0.01)
    assert _value(_samples(await webhook.metrics()), "modelbooster_webhook_ready") == 1
    webhook.server.state.shutting_down = True  # what SIGTERM sets first: the pod stays ready while it drains
    try:
        assert _value(_samples(await webhook.metrics()), "modelbooster_webhook_ready") == 1
    finally:
        webhook.server.state.shutting_down = False  # so that the fixture still stops the server


async def test_latency_histogram_uses_the_go_default_buckets_up_to_30_s(webhook: Webhook) -> None:
    text = await webhook.metrics()
    buckets = sorted(
        float(sample.labels["le"])
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "controller_runtime_webhook_latency_seconds_bucket"
        and sample.labels["webhook"] == VALIDATE_PATH
    )
    go_defaults = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]
    # ... then up to the API server's longest timeout (30 s), so a p99 near any timeoutSeconds is measurable.
    assert buckets == [*go_defaults, 15.0, 20.0, 30.0, float("inf")]


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
