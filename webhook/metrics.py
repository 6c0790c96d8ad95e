"""Prometheus metrics of the webhook, in a registry of its own so several apps (tests) never collide.

Request metrics carry controller-runtime's names and labels (`webhook` is the URL path, `code` the HTTP
status), so dashboards built for Go webhooks work unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from certs.reload import ReloadOutcome, ReloadResult
from process.build import register_build_info
from webhook.admission import DENIAL_REASONS

# Prometheus' Go client default buckets, which controller-runtime's webhook latency histogram uses, then up to
# 30 s: the API server waits up to `timeoutSeconds` (at most 30), and a p99 near any such timeout must fall
# below the last finite bucket to be measurable.
LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0)
# Why a request was dropped: too many in flight (429), no room in the body budget (429), body not sent
# within --request-read-timeout (408), client hung up mid-body.
DROP_REASONS: Final = ("too_many_in_flight", "body_budget", "read_timeout", "client_disconnected")
# Why an answer ended its keep-alive connection on purpose (webhook/rotation.py): the connection's age, or
# shutting down.
CLOSE_REASONS: Final = ("age", "shutdown")


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.build_info = register_build_info(self.registry, component="webhook")
        self.requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ["webhook", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests.",
            ["webhook"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ["webhook"],
            registry=self.registry,
        )
        self.decisions = Counter(
            "modelbooster_admission_decisions_total",
            "Admission decisions by webhook path, operation and outcome.",
            ["webhook", "operation", "allowed"],
            registry=self.registry,
        )
        self.denials = Counter(
            "modelbooster_admission_denials_total",
            "Refused admission requests by webhook path and the reason of the Status returned (Invalid, "
            "BadRequest, InternalError).",
            ["webhook", "reason"],
            registry=self.registry,
        )
        self.ready = Gauge(
            "modelbooster_webhook_ready",
            "1 while /readyz answers ok (a serving certificate is loaded; also while shutting down, so that the "
            "Service can still fall back to this pod), else 0.",
            registry=self.registry,
        )
        self.dropped = Counter(
            "modelbooster_webhook_requests_dropped_total",
            "Admission requests not served: refused to protect the webhook (answered 429 or 408), "
            "or abandoned by the client mid-body (nothing to answer).",
            ["webhook", "reason"],
            registry=self.registry,
        )
        self.buffered_bytes = Gauge(
            "modelbooster_webhook_buffered_bytes",
            "Request body bytes reserved in memory now, out of --max-buffered-bytes.",
            registry=self.registry,
        )
        self.cert_reloads = Counter(
            "modelbooster_webhook_certificate_reloads_total",
            "Serving certificate loads from disk, by result (loaded or failed).",
            ["result"],
            registry=self.registry,
        )
        self.cert_not_after = Gauge(
            "modelbooster_webhook_certificate_expiry_timestamp_seconds",
            "When the serving certificate in use expires (Unix time); 0 before one is loaded.",
            registry=self.registry,
        )
        self.connections_closed = Counter(
            "modelbooster_webhook_connections_closed_total",
            "Keep-alive connections ended on purpose by an answer's `Connection: close`, by reason: `age` (older "
            "than --connection-max-age, so that the client reconnects through the Service and load spreads over "
            "the replicas) or `shutdown` (after SIGTERM).",
            ["reason"],
            registry=self.registry,
        )
        for reason in CLOSE_REASONS:
            self.connections_closed.labels(reason=reason)

    def for_path(self, path: str) -> PathMetrics:
        """The series of one webhook path, created now so a scrape shows zeros rather than nothing."""
        for result in (ReloadOutcome.LOADED, ReloadOutcome.FAILED):
            self.cert_reloads.labels(result=result.value)
        return PathMetrics(self, path)

    def report_buffered(self, used: Callable[[], int]) -> None:
        """Let `modelbooster_webhook_buffered_bytes` read `used()` at every scrape (nothing per request)."""
        self.buffered_bytes.set_function(used)

    def report_readiness(self, reason: Callable[[], str | None]) -> None:
        """Let `modelbooster_webhook_ready` read `reason()` (why not ready, or None) at every scrape."""
        self.ready.set_function(lambda: 1.0 if reason() is None else 0.0)

    def record_reload(self, result: ReloadResult) -> None:
        if result.outcome is not ReloadOutcome.UNCHANGED:
            self.cert_reloads.labels(result=result.outcome.value).inc()
        self.cert_not_after.set(_timestamp(result.not_after))


class PathMetrics:
    """One path's series, bound once: a `labels()` lookup costs more than the update it precedes.

    What changes with every request is kept cheap: the in-flight gauge is a plain count read at scrape
    time, so a request updates one counter and observes one latency (plus its decision's counter).
    """

    def __init__(self, metrics: WebhookMetrics, path: str) -> None:
        self.path = path
        self.in_flight = 0
        metrics.in_flight.labels(webhook=path).set_function(lambda: self.in_flight)
        self.latency = metrics.latency.labels(webhook=path)
        self._requests = metrics.requests
        self._decisions = metrics.decisions
        self._by_code: dict[int, Counter] = {}
        self._by_decision: dict[tuple[str, bool], Counter] = {}
        self._by_denial = {reason: metrics.denials.labels(webhook=path, reason=reason) for reason in DENIAL_REASONS}
        self._dropped = {reason: metrics.dropped.labels(webhook=path, reason=reason) for reason in DROP_REASONS}

    def request_done(self, *, status: int, seconds: float) -> None:
        self.latency.observe(seconds)
        counter = self._by_code.get(status)
        if counter is None:
            counter = self._by_code[status] = self._requests.labels(webhook=self.path, code=str(status))
        counter.inc()

    def drop(self, reason: str) -> None:
        self._dropped[reason].inc()

    def decision(self, *, operation: str, allowed: bool, reason: str | None = None) -> None:
        """Count one answer; a denial also by its Status `reason` (one of DENIAL_REASONS)."""
        if not allowed and reason in self._by_denial:
            self._by_denial[reason].inc()
        counter = self._by_decision.get((operation, allowed))
        if counter is None:
            counter = self._decisions.labels(
                webhook=self.path, operation=operation, allowed="true" if allowed else "false"
            )
            self._by_decision[(operation, allowed)] = counter
        counter.inc()


def _timestamp(moment: datetime | None) -> float:
    return moment.timestamp() if moment is not None else 0.0
