"""The aiohttp applications: admission over HTTPS, and metrics and probes over plain HTTP.

Transport problems are answered here, each with a one-line plain-text reason and never a traceback:
405 (not POST), 415 (not JSON), 413 (body over the limit), 400 (not an AdmissionReview we can answer),
and, to protect the webhook itself, 429 with Retry-After (too many requests in flight, or no room left in
the memory budget for bodies) and 408 (body not received in time). A client that hangs up mid-body gets
nothing and is counted, not logged as an error. Everything else is an AdmissionReview response with
HTTP 200, allowed or denied (webhook/admission.py).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

from certs.reload import TLS_VERSIONS, CertificateReloader, watching
from process.jsontext import MalformedJson, encode_json, parse_json
from process.listener import make_listener_app
from webhook.admission import (
    AdmissionRequest,
    AdmissionResponse,
    BadReview,
    beyond_bounds,
    mutate,
    object_identity,
    parse_review,
    review_response,
    validate,
)
from webhook.body import RETRY_AFTER_SECONDS, BodyRefused, ClientGone, read_body
from webhook.budget import BodyBudget
from webhook.memory import Allocator, Trimmer
from webhook.metrics import PathMetrics, WebhookMetrics
from webhook.rotation import ConnectionRotation, ProbeRecord
from webhook.settings import Settings
from webhook.shape import surely_within_bounds

log = logging.getLogger(__name__)

MUTATE_PATH: Final = "/mutate/modelbooster"
VALIDATE_PATH: Final = "/validate/modelbooster"
JSON_TYPE: Final = "application/json"
_LOGGED_MESSAGE_LIMIT: Final = 1000
# Under a flood, one warning per interval says that requests are being refused; the metrics count them all.
_SHEDDING_WARNING_INTERVAL: Final = 60.0

Decide = Callable[[AdmissionRequest], AdmissionResponse]


@dataclass
class WebhookState:
    settings: Settings
    metrics: WebhookMetrics
    reloader: CertificateReloader
    budget: BodyBudget
    trimmer: Trimmer
    rotation: ConnectionRotation
    shutting_down: bool = False
    in_flight: int = 0
    # Set whenever no admission request is being served; shutdown waits on it.
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    last_shedding_warning: float = -math.inf

    def __post_init__(self) -> None:
        self.idle.set()

    def body_released(self) -> None:
        if self.trimmer.released(self.budget.take_released()):
            # After this response is on its way: a trim takes milliseconds.
            asyncio.get_running_loop().call_soon(self.trimmer.trim)

    def warn_shedding(self, message: str) -> None:
        now = time.monotonic()
        if now - self.last_shedding_warning >= _SHEDDING_WARNING_INTERVAL:
            self.last_shedding_warning = now
            log.warning(
                "refusing admission requests to protect the webhook (%s); "
                "modelbooster_webhook_requests_dropped_total counts them",
                message,
            )

    def request_started(self) -> None:
        self.in_flight += 1
        self.idle.clear()

    def request_finished(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.idle.set()

    def readiness(self) -> str | None:
        """Why the webhook is not ready, or None when it is.

        Shutting down is not a reason: the pod's deletion already takes it out of the Service's ready
        endpoints, and a pod that stays ready while it drains is what the Service falls back to when no other
        pod is ready (every replica replaced at once); docs/design/webhook.md §8."""
        if not self.reloader.loaded:
            return f"no serving certificate loaded yet from {self.reloader.cert_file}"
        return None

    def answer_probe(self) -> str | None:
        """`readiness()` for a readiness probe (the kubelet's), which is remembered: see webhook/rotation.py."""
        reason = self.readiness()
        self.rotation.probes.answered(ready=reason is None)
        return reason

    def last_answer(self, connection: object) -> str | None:
        """Why the answer being sent on `connection` should close it (webhook/rotation.py), or None."""
        if self.shutting_down:
            return "shutdown"
        if self.rotation.due(connection):
            return "age"
        return None


STATE: Final = web.AppKey("modelbooster_webhook_state", WebhookState)


def _plain(status: int, reason: str, **headers: str) -> web.Response:
    # One line, whatever the reason contains (JSON decoder messages can quote the input).
    line = " ".join(reason.split())
    return web.Response(status=status, text=line + "\n", content_type="text/plain", headers=headers)


def _refuse_unread(request: web.Request) -> web.Response | None:
    """405 or 415, decided from the request line and headers alone."""
    if request.method != "POST":
        return _plain(405, f"method {request.method} is not allowed; use POST", Allow="POST")
    charset = (request.charset or "utf-8").lower()
    if request.content_type != JSON_TYPE or charset not in ("utf-8", "utf8"):
        got = request.headers.get("Content-Type", "none")
        return _plain(415, f"unsupported Content-Type {got!r}; expected {JSON_TYPE}")
    return None


def _answer_uncollected(body: bytes | bytearray, *, path: str, metrics: PathMetrics, decide: Decide) -> web.Response:
    """`_answer` with no cyclic garbage collection meanwhile (it runs synchronously, nothing else runs).

    A large object allocates hundreds of thousands of containers, and each full collection the
    allocations trigger walks all of them again: that made refusing a 3 MB object super-linear. What
    the decision leaves behind is freed by reference counting; the rare cycle waits for the next run.
    (A plain function, not a context manager: this runs for every request.)
    """
    if not gc.isenabled():
        return _answer(body, path=path, metrics=metrics, decide=decide)
    gc.disable()
    try:
        return _answer(body, path=path, metrics=metrics, decide=decide)
    finally:
        gc.enable()


def _admission_handler(
    *, metrics: PathMetrics, decide: Decide
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    path = metrics.path

    async def handle(request: web.Request) -> web.StreamResponse:
        state = request.app[STATE]
        started = time.perf_counter()
        limit = state.settings.max_requests_in_flight
        if state.in_flight >= limit:
            response = _shed(
                state,
                metrics=metrics,
                reason="too_many_in_flight",
                message=f"{limit} admission requests are in flight already; retry later",
            )
        else:
            metrics.in_flight += 1
            state.request_started()
            try:
                response = await _serve(request, state=state, metrics=metrics, decide=decide)
            except ClientGone:
                metrics.drop("client_disconnected")
                log.info(
                    "client closed the connection before sending the whole request body",
                    extra={"context": {"webhook": path, "received_bytes": request.content.total_bytes}},
                )
                return web.Response(status=400)  # nobody is left to read it; not counted as answered
            except Exception:
                log.exception("unexpected failure serving %s", path)
                response = _plain(500, "internal error; see the webhook's logs")
            finally:
                metrics.in_flight -= 1
                state.request_finished()
        closing = state.last_answer(request.protocol)
        if closing is not None:
            # The client's next request opens a new connection, which the Service may send to another pod.
            response.force_close()
            state.metrics.connections_closed.labels(reason=closing).inc()
        metrics.request_done(status=response.status, seconds=time.perf_counter() - started)
        return response

    return handle


def _shed(state: WebhookState, *, metrics: PathMetrics, reason: str, message: str) -> web.Response:
    metrics.drop(reason)
    state.warn_shedding(message)
    response = _plain(429, message, **{"Retry-After": RETRY_AFTER_SECONDS})
    response.force_close()  # the body is not read: the connection cannot carry another request
    return response


async def _serve(request: web.Request, *, state: WebhookState, metrics: PathMetrics, decide: Decide) -> web.Response:
    path = metrics.path
    settings = state.settings
    refusal = _refuse_unread(request)
    if refusal is not None:
        _log_bad(path=path, code=refusal.status, reason=refusal.text)
        return refusal
    reservation = state.budget.reservation()
    try:
        try:
            body = await read_body(
                request,
                limit=settings.max_request_bytes,
                budget=settings.max_buffered_bytes,
                reservation=reservation,
                within=settings.request_read_timeout,
            )
        except BodyRefused as refused:
            return _refused(refused, state=state, metrics=metrics)
        return _answer_uncollected(body, path=path, metrics=metrics, decide=decide)
    finally:
        reservation.release()
        state.body_released()


def _refused(refused: BodyRefused, *, state: WebhookState, metrics: PathMetrics) -> web.Response:
    if refused.status == 429:
        return _shed(state, metrics=metrics, reason=refused.reason, message=refused.message)
    if refused.reason:
        metrics.drop(refused.reason)
    _log_bad(path=metrics.path, code=refused.status, reason=refused.message)
    response = _plain(refused.status, refused.message, **refused.headers)
    response.force_close()  # the body was not read to its end: the connection cannot carry another request
    return response


def _answer(body: bytes | bytearray, *, path: str, metrics: PathMetrics, decide: Decide) -> web.Response:
    try:
        api_version, admission = parse_review(parse_json(body))
    except MalformedJson as error:
        response = _plain(400, f"malformed JSON: {error}")
        _log_bad(path=path, code=400, reason=response.text)
        return response
    except BadReview as error:
        _log_bad(path=path, code=400, reason=str(error))
        return _plain(400, str(error))
    answer = None if surely_within_bounds(body) else beyond_bounds(admission)
    if answer is None:
        answer = decide(admission)
    operation = admission["operation"]
    metrics.decision(operation=operation, allowed=answer["allowed"], reason=answer.get("status", {}).get("reason"))
    _log_decision(path=path, request=admission, response=answer)
    review = review_response(api_version=api_version, response=answer)
    return web.Response(body=encode_json(review), content_type=JSON_TYPE, charset="utf-8")


def _log_bad(*, path: str, code: int, reason: str | None) -> None:
    log.info("bad admission request: %s", (reason or "").strip(), extra={"context": {"webhook": path, "code": code}})


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
    reason = request.app[STATE].answer_probe()
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
    state = WebhookState(
        settings=settings,
        metrics=metrics,
        reloader=reloader,
        budget=BodyBudget(settings.max_buffered_bytes),
        trimmer=Trimmer(Allocator.load()),
        rotation=ConnectionRotation(
            max_age=settings.connection_max_age, probes=ProbeRecord(silence=settings.probe_silence)
        ),
    )
    metrics.report_readiness(state.readiness)
    metrics.report_buffered(lambda: state.budget.used)
    # Bodies are read by webhook/body.py under its own bounds; aiohttp's limit stays as a backstop.
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
    app = make_listener_app(registry=state.metrics.registry, ready=state.answer_probe)
    app[STATE] = state
    return app
