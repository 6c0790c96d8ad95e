"""Metrics of the webhook-certificate duty, registered on the reconciler's registry.

The expiry gauge is computed at scrape time from the Secrets in the informer caches, which run on every
replica: a standby reports the same dates as the leader, and a Secret someone replaced by hand is reported as
it is, not as the leader last wrote it. It is named apart from the webhook's own
`modelbooster_webhook_certificate_expiry_timestamp_seconds` (the certificate a webhook pod has loaded), so an
alert on one never double-counts the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reconciler.runtime.objects import meta_text

EXPIRY_METRIC: Final = "modelbooster_certificate_expiry_timestamp_seconds"
EXPIRY_HELP: Final = (
    "When the certificate stored in each managed Secret expires (Unix time): the serving certificate for the "
    "webhook's TLS Secret, the CA for the CA Secret; absent while a Secret is missing or unreadable"
)
# A Secret (as cached) -> the expiry of the certificate it holds, or None when missing or unreadable.
ExpiryReader = Callable[[Mapping[str, Any] | None], datetime | None]


class CertDutyMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.injections = Counter(
            "modelbooster_cabundle_injections_total",
            "caBundle writes into a webhook configuration (first injection, new CA, or a drifted value restored)",
            ["kind"],
            registry=registry,
        )
        self.issued = Counter(
            "modelbooster_certificates_issued_total",
            "Certificates the reconciler issued for the webhook, by certificate (ca, serving)",
            ["certificate"],
            registry=registry,
        )
        self.repairs = Counter(
            "modelbooster_certificate_secret_repairs_total",
            "Secrets found unusable (a key missing, not PEM, a key that does not match) and rewritten",
            ["secret"],
            registry=registry,
        )
        self.sync_errors = Counter(
            "modelbooster_certificate_sync_errors_total",
            "Certificate checks that failed (API errors, too many conflicting writers); retried with backoff",
            registry=registry,
        )
        for certificate in ("ca", "serving"):
            self.issued.labels(certificate=certificate)

    def watch_expiry(self, secrets: Mapping[str, tuple[Callable[[], Mapping[str, Any] | None], ExpiryReader]]) -> None:
        """Export the expiry gauge: secret name -> (how to get the cached Secret, how to read its expiry)."""
        self.registry.register(_ExpiryCollector(secrets))


class _ExpiryCollector(Collector):
    def __init__(self, secrets: Mapping[str, tuple[Callable[[], Mapping[str, Any] | None], ExpiryReader]]) -> None:
        self._secrets = dict(secrets)
        # Parsing PEM on every scrape is wasted work: remember the answer per (secret, resourceVersion).
        self._seen: dict[str, tuple[str, datetime | None]] = {}

    def _expiry(self, name: str, secret: Mapping[str, Any] | None, read: ExpiryReader) -> datetime | None:
        if secret is None:
            return None
        version = meta_text(secret, "resourceVersion")
        known = self._seen.get(name)
        if known is not None and known[0] == version and version:
            return known[1]
        expiry = read(secret)
        self._seen[name] = (version, expiry)
        return expiry

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(EXPIRY_METRIC, EXPIRY_HELP, labels=["secret"])
        for name, (get, read) in sorted(self._secrets.items()):
            expiry = self._expiry(name, get(), read)
            if expiry is not None:
                family.add_metric([name], expiry.timestamp())
        yield family

    def describe(self) -> Iterable[Metric]:
        yield GaugeMetricFamily(EXPIRY_METRIC, EXPIRY_HELP, labels=["secret"])
