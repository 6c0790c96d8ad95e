"""The aiohttp applications: admission over HTTPS, and metrics and probes over plain HTTP.

Transport problems are answered here, each with a one-line plain-text reason and never a traceback:
405 (not POST), 415 (not JSON), 413 (body over the limit), 400 (not an AdmissionReview we can answer).
Everything else is an AdmissionReview response with HTTP 200, allowed or denied (webhook/admission.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

from certs.reload import TLS_VERSIONS, CertificateReloader, watching
from process.listener import make_listener_app
from webhook.admission import (
    AdmissionRequest,
    AdmissionResponse,
    BadReview,
    mutate,
    object_identity,
    parse_review,
    review_response,
    validate,
)
from webhook.metrics import PathMetrics, WebhookMetrics
from webhook.settings import Settings

log = logging.getLogger(__name__)

MUTATE_PATH: Final = "/mutate/modelbooster"
VALIDATE_PATH: Final = "/validate/modelbooster"
JSON_TYPE: Final = "application/json"
_LOGGED_MESSAGE_LIMIT: Final = 1000

Decide = Callable[[AdmissionRequest], AdmissionResponse]


@dataclass
class WebhookState:
    settings: Settings
    metrics: WebhookMetrics
    reloader: CertificateReloader
    shutting_down: bool = False
    in_flight: int = 0
    # Set whenever no admission request is being served; shutdown waits on it.
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.idle.set()

    def request_started(self) -> None:
        self.in_flight += 1
        self.idle.clear()

    def request_finished(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.idle.set()

    def readiness(self) -> str | None:
        """Why the webhook is not ready, or None when it is."""
        if self.shutting_down:
            return "shutting down"
        if not self.reloader.loaded:
            return f"no serving certificate loaded yet from {self.reloader.cert_file}"
        return None


STATE: Final = web.AppKey("modelbooster_webhook_state", WebhookState)


def _plain(status: int, reason: str, **headers: str) -> web.Response:
    # One line, whatever the reason contains (JSON decoder messages can quote the input).
    line = " ".join(reason.split())
    return web.Response(status=status, text=line + "\n", content_type="text/plain", headers=headers)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


async def _read_review(request: web.Request, *, limit: int) -> object | web.Response:
    """The parsed JSON body, or the 4xx response that explains why there is none."""
    if request.method != "POST":
        return _plain(405, f"method {request.method} is not allowed; use POST", Allow="POST")
    charset = (request.charset or "utf-8").lower()
    if request.content_type != JSON_TYPE or charset not in ("utf-8", "utf8"):
        got = request.headers.get("Content-Type", "none")
        return _plain(415, f"unsupported Content-Type {got!r}; expected {JSON_TYPE}")
    too_large = f"request body exceeds the limit of {limit} bytes"
    if request.content_length is not None and request.content_length > limit:
        return _plain(413, too_large)
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return _plain(413, too_large)
    try:
        parsed: object = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        detail = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        return _plain(400, f"malformed JSON: {detail}")
    return parsed


def _admission_handler(
    *, metrics: PathMetrics, decide: Decide
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    path = metrics.path

    async def handle(request: web.Request) -> web.StreamResponse:
        state = request.app[STATE]
        metrics.in_flight.inc()
        state.request_started()
        started = time.perf_counter()
        try:
            response = await _serve(request, state=state, metrics=metrics, decide=decide)
        except Exception:
            log.exception("unexpected failure serving %s", path)
            response = _plain(500, "internal error; see the webhook's logs")
        finally:
            metrics.in_flight.dec()
            state.request_finished()
        if state.shutting_down:
            # Tell the client to take its next request elsewhere rather than reuse this connection.
            response.force_close()
        metrics.request_done(status=response.status, seconds=time.perf_counter() - started)
        return response

    return handle


async def _serve(request: web.Request, *, state: WebhookState, metrics: PathMetrics, decide: Decide) -> web.Response:
    path = metrics.path
    parsed = await _read_review(request, limit=state.settings.max_request_bytes)
    if isinstance(parsed, web.Response):
        log.info("bad admission request: %s", parsed.text, extra={"context": {"webhook": path, "code": parsed.status}})
        return parsed
    try:
        api_version, admission = parse_review(parsed)
    except BadReview as error:
        log.info("bad admission request: %s", error, extra={"context": {"webhook": path, "code": 400}})
        return _plain(400, str(error))
    answer = decide(admission)
    operation = admission["operation"]
    metrics.decision(operation=operation, allowed=answer["allowed"], reason=answer.get("status", {}).get("reason"))
    _log_decision(path=path, request=admission, response=answer)
    body = json.dumps(review_response(api_version=api_version, response=answer), separators=(",", ":"))
    return web.Response(text=body, content_type=JSON_TYPE)


def _log_decision(*, path: str, request: AdmissionRequest, response: AdmissionResponse) -> None:
    if response["allowed"] and not log.isEnabledFor(logging.DEBUG):
        return  # the common case: nothing to log, so build nothing
    namespace, name = object_identity(request)
    context = {
        "webhook": path,
        "uid": request["uid"],
        "namespace": namespace,
        "name": name,
        "operation": request["operation"],
        "dry_run": request.get("dryRun", False),
        "allowed": response["allowed"],
    }
    if response["allowed"]:
        # Allowed requests are the bulk of the traffic: debug only.
        log.debug("admitted", extra={"context": context})
    else:
        status = response.get("status", {})
        message = status.get("message", "")
        if len(message) > _LOGGED_MESSAGE_LIMIT:
            # An Invalid value can quote a whole free-form field back; the log keeps the gist, not the payload.
            omitted = len(message) - _LOGGED_MESSAGE_LIMIT
            message = f"{message[:_LOGGED_MESSAGE_LIMIT]}... ({omitted} more characters)"
        log.info("denied: %s", message, extra={"context": {**context, "code": status.get("code")}})


async def _healthz(_request: web.Request) -> web.Response:
    return _plain(200, "ok")


async def _readyz(request: web.Request) -> web.Response:
    reason = request.app[STATE].readiness()
    return _plain(200, "ok") if reason is None else _plain(503, reason)


def make_app(settings: Settings, *, metrics: WebhookMetrics | None = None) -> web.Application:
    """The HTTPS admission application; its state (metrics, certificate reloader) is under `STATE`."""
    metrics = metrics or WebhookMetrics()
    reloader = CertificateReloader(
        cert_file=settings.tls_cert_file,
        key_file=settings.tls_private_key_file,
        min_version=TLS_VERSIONS[settings.tls_min_version],
        on_reload=metrics.record_reload,
    )
    state = WebhookState(settings=settings, metrics=metrics, reloader=reloader)
    metrics.report_readiness(state.readiness)
    # aiohttp enforces the size limit while reading, so an oversized chunked body is never buffered whole.
    app = web.Application(client_max_size=settings.max_request_bytes)
    app[STATE] = state
    app.router.add_route("*", MUTATE_PATH, _admission_handler(metrics=metrics.for_path(MUTATE_PATH), decide=mutate))
    app.router.add_route(
        "*", VALIDATE_PATH, _admission_handler(metrics=metrics.for_path(VALIDATE_PATH), decide=validate)
    )
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)

    async def watch_certificates(_app: web.Application) -> AsyncIterator[None]:
        async with watching(reloader, interval=settings.cert_check_interval):
            yield

    app.cleanup_ctx.append(watch_certificates)
    return app


def make_metrics_app(admission_app: web.Application) -> web.Application:
    """The plain-HTTP application for Prometheus and probes, sharing the admission app's state."""
    state = admission_app[STATE]
    app = make_listener_app(registry=state.metrics.registry, ready=state.readiness)
    app[STATE] = state
    return app
