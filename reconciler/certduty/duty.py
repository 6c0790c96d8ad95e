"""The webhook-certificate duty, a runnable (a leader task): a self-signed CA, the webhook's serving certificate,
and `caBundle` injection, one pass (`CertDuty.sync`) at a time.

A pass reads the two Secrets and both webhook configurations from the API and writes what differs in an order
that never leaves the API server distrusting what is served (docs/design/certificates.md §5); while the serving
Secret is gone, the CAs of the injected bundle stay trusted for a bounded overlap (§6); an unarmed configuration
gets its entries once a webhook pod has been ready for the arm delay (§7, reconciler/certduty/arming.py).
Between passes it sleeps until one of its objects changes or `check_interval` passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from cryptography import x509

from certs.authority import KeyPair
from certs.bundle import CertBundle, describe_certificate
from certs.injector import InjectionError, drifted_webhooks, inject_ca_bundle, injected_cas
from certs.lifecycle import Certificates, ensure_certificates
from certs.rotation import DEFAULT_POLICY, RotationPolicy
from certs.secret import (
    SecretFormatError,
    build_ca_secret,
    build_serving_secret,
    merged_secret,
    parse_ca_secret,
    parse_serving_secret,
)
from process.backoff import backoff_delay
from reconciler.certduty.arming import (
    ArmingError,
    armed_copy,
    entries_match,
    live_entries,
    ready_endpoints,
    wanted_entries,
)
from reconciler.certduty.kinds import SECRET, WEBHOOK_CONFIGURATION_KINDS
from reconciler.certduty.metrics import CertDutyMetrics
from reconciler.certduty.settings import CertDutySettings
from reconciler.peer import Clock, utc_now
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text
from reconciler.runtime.source import EventType

logger = logging.getLogger(__name__)

TASK_NAME: Final = "webhook-certificates"
SECRET_LABELS: Final = {
    "app.kubernetes.io/part-of": "modelbooster",
    "app.kubernetes.io/component": "webhook-certificate",
    "app.kubernetes.io/managed-by": "modelbooster-reconciler",
}
# Passes that restart because another writer got in between; beyond this something keeps fighting us.
MAX_ATTEMPTS: Final = 5

class CertDutyError(Exception):
    """A pass could not complete; the message says why. The duty retries with backoff."""


class _Restart(Exception):
    """Someone else wrote one of our objects after we read it: read again and plan again."""


@dataclass(frozen=True)
class SyncReport:
    """What one pass found and did (for logs and tests)."""

    issued_ca: bool = False
    issued_serving: bool = False
    reasons: tuple[str, ...] = ()
    # Kinds whose configuration got a new caBundle, with the entries that had drifted.
    injected: tuple[tuple[str, tuple[str, ...]], ...] = ()
    secrets_written: tuple[str, ...] = ()
    # Secrets that existed but could not be used, with why.
    repaired: tuple[tuple[str, str], ...] = ()
    missing_configurations: tuple[str, ...] = ()
    # Kinds whose configuration got its entries written now, and those still waiting for a ready webhook pod.
    armed: tuple[str, ...] = ()
    unarmed: tuple[str, ...] = ()
    serving_not_after: datetime | None = None
    ca_not_after: datetime | None = None

    @property
    def wrote(self) -> bool:
        return bool(self.injected or self.secrets_written)


@dataclass
class _State:
    ca_secret: dict[str, Any] | None
    tls_secret: dict[str, Any] | None
    ca: KeyPair | None
    bundle: CertBundle | None
    problems: dict[str, str] = field(default_factory=dict)  # secret name -> why it is unusable
    # Each webhook configuration kind with the object read (None: it does not exist).
    configurations: list[tuple[Kind, dict[str, Any] | None]] = field(default_factory=list)


class CertDuty:
    def __init__(
        self,
        *,
        client: KubeClient,
        settings: CertDutySettings,
        metrics: CertDutyMetrics,
        clock: Clock = utc_now,
        policy: RotationPolicy = DEFAULT_POLICY,
        field_manager: str = "modelbooster",
        retry_base: float = 1.0,
        retry_max: float = 300.0,
        endpoints: Callable[[], list[dict[str, Any]]] = list,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.settings = settings
        self.metrics = metrics
        self._endpoints = endpoints  # the webhook Service's EndpointSlices, from a cache
        self._monotonic = monotonic
        # Since when the webhook Service has had a ready endpoint (None: it has none now).
        self._ready_since: float | None = None
        # Seconds until a pass must look again although nothing woke it (an arm delay running out).
        self._look_again: float | None = None
        self._clock = clock
        self._policy = policy
        self._field_manager = field_manager
        self._retry_base = retry_base
        self._retry_max = retry_max
        self._wake = asyncio.Event()
        # (kind, name, resourceVersion) of our own recent writes: their watch events need no new pass.
        self._own_writes: deque[tuple[str, str, str]] = deque(maxlen=16)
        self.last_report: SyncReport | None = None
        for name in (settings.tls_secret, settings.ca_secret):
            metrics.repairs.labels(secret=name)  # a series from the start, so rate() and alerts see 0

    # ------------------------------------------------------------------ waking up
    def on_event(self, event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Informer handler: any change to our four objects that we did not make ourselves starts a pass."""
        obj = new if new is not None else old
        if event != "DELETED" and obj is not None and self._written_by_us(obj):
            return
        self._wake.set()

    def _written_by_us(self, obj: Mapping[str, Any]) -> bool:
        key = (str(obj.get("kind") or ""), meta_text(obj, "name"), meta_text(obj, "resourceVersion"))
        return key in self._own_writes

    def _remember(self, obj: Mapping[str, Any], kind: Kind) -> None:
        self._own_writes.append((kind.kind, meta_text(obj, "name"), meta_text(obj, "resourceVersion")))

    # ------------------------------------------------------------------ the leader task
    async def run(self) -> None:
        """Pass, then sleep until woken or `check_interval` passes; forever (cancelled when leadership ends)."""
        failures = 0
        while True:
            self._wake.clear()
            try:
                await self.sync()
            except (ApiError, CertDutyError) as error:
                failures += 1
                delay = backoff_delay(
                    failures, base=self._retry_base, cap=min(self._retry_max, self.settings.check_interval)
                )
                self.metrics.sync_errors.inc()
                logger.warning("webhook certificates: check failed: %s; retrying in %.1fs", error, delay)
                # Sleep out the backoff even if events arrive: a writer we keep conflicting with would
                # otherwise turn this into a busy loop.
                await asyncio.sleep(delay)
                continue
            failures = 0
            wait = self.settings.check_interval
            if self._look_again is not None:
                wait = min(wait, self._look_again)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def sync(self) -> SyncReport:
        """One pass; returns what it did. Raises ApiError or CertDutyError when it cannot complete."""
        for _ in range(MAX_ATTEMPTS):
            try:
                report = await self._sync_once()
            except _Restart as restart:
                logger.info("webhook certificates: %s; reading again", restart)
                continue
            self.last_report = report
            return report
        raise CertDutyError(f"gave up after {MAX_ATTEMPTS} attempts: another writer keeps changing our objects")

    # ------------------------------------------------------------------ one pass
    async def _sync_once(self) -> SyncReport:
        settings = self.settings
        state = await self._read_secrets()
        state.configurations = [
            (kind, await self._get(kind, None, settings.configuration)) for kind in WEBHOOK_CONFIGURATION_KINDS
        ]
        for name, problem in state.problems.items():
            logger.warning(
                "webhook certificates: Secret %s/%s is unusable (%s); replacing its content",
                settings.namespace, name, problem,
            )  # fmt: skip
        now = self._clock()
        certs = ensure_certificates(
            ca=state.ca, bundle=state.bundle, service=settings.service, namespace=settings.namespace, now=now,
            policy=self._policy, trusted=self._trusted(state),
        )  # fmt: skip
        for cert in certs.plan.inherited:
            logger.info(
                "webhook certificates: still trusting %s from the injected caBundle (the serving Secret "
                "no longer says which CA signed the certificate the webhook serves)", describe_certificate(cert),
            )  # fmt: skip
        issued_serving = state.bundle is None or certs.bundle.tls_crt != state.bundle.tls_crt
        issued_ca = certs.ca is not state.ca
        injected, missing, armed, unarmed = await self._inject(state.configurations, certs.bundle.ca_bundle_base64())
        written = await self._write_secrets(state, certs)
        # Logged and counted once stored: a pass restarted by a conflict issues again from scratch.
        if issued_ca or issued_serving:
            self._log_issued(certs, issued_ca=issued_ca, issued_serving=issued_serving)
        if issued_ca:
            self.metrics.issued.labels(certificate="ca").inc()
        if issued_serving:
            self.metrics.issued.labels(certificate="serving").inc()
        for name in state.problems:
            self.metrics.repairs.labels(secret=name).inc()
        return SyncReport(
            issued_ca=issued_ca,
            issued_serving=issued_serving,
            reasons=certs.plan.reasons,
            injected=tuple(injected),
            secrets_written=tuple(written),
            repaired=tuple(state.problems.items()),
            missing_configurations=tuple(missing),
            armed=tuple(armed),
            unarmed=tuple(unarmed),
            serving_not_after=certs.bundle.serving_not_after,
            ca_not_after=certs.ca.cert.not_valid_after_utc,
        )

    def _log_issued(self, certs: Certificates, *, issued_ca: bool, issued_serving: bool) -> None:
        why = "; ".join(certs.plan.reasons) or "the stored certificates are unusable"
        if issued_ca:
            logger.info(
                "webhook certificates: issued a new CA valid until %s (%s)",
                certs.ca.cert.not_valid_after_utc.isoformat(), why,
            )  # fmt: skip
        if issued_serving:
            logger.info(
                "webhook certificates: issued a serving certificate for %s.%s.svc valid until %s (%s)",
                self.settings.service, self.settings.namespace, certs.bundle.serving_not_after.isoformat(), why,
            )  # fmt: skip

    async def _get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(kind, namespace, name)
        except ApiError as error:
            if error.not_found:
                return None
            raise

    async def _read_secrets(self) -> _State:
        namespace, settings = self.settings.namespace, self.settings
        ca_secret = await self._get(SECRET, namespace, settings.ca_secret)
        tls_secret = await self._get(SECRET, namespace, settings.tls_secret)
        state = _State(ca_secret=ca_secret, tls_secret=tls_secret, ca=None, bundle=None)
        if ca_secret is not None:
            try:
                state.ca = parse_ca_secret(ca_secret)
            except SecretFormatError as error:
                state.problems[settings.ca_secret] = str(error)
        if tls_secret is not None:
            try:
                state.bundle = parse_serving_secret(tls_secret)
            except SecretFormatError as error:
                state.problems[settings.tls_secret] = str(error)
        return state

    def _trusted(self, state: _State) -> list[x509.Certificate]:
        """The certificates of the caBundle injected now, when they may matter (docs/design/certificates.md §6)."""
        if state.bundle is not None:
            return []  # our serving Secret says what is served; the injected value is only drift to correct
        found: list[x509.Certificate] = []
        for _, configuration in state.configurations:
            if configuration is None:
                continue
            certs, problems = injected_cas(configuration)
            found += certs
            for problem in problems:
                logger.warning("webhook certificates: not trusting part of the injected caBundle: %s", problem)
        return found

    def _ready_for(self) -> float | None:
        """For how long the webhook Service has had a ready endpoint, as seen at each pass (None: it has none).
        Every pass looks, so that a ready spell is timed from its start whatever the configurations need."""
        if ready_endpoints(self._endpoints()) == 0:
            self._ready_since = None
            return None
        now = self._monotonic()
        if self._ready_since is None:
            self._ready_since = now
        return now - self._ready_since

    def _may_arm(self, ready_for: float | None) -> bool:
        """A webhook endpoint has been ready for the arm delay; otherwise when to look again is noted."""
        if ready_for is None:
            return False
        remaining = self.settings.arm_delay - ready_for
        if remaining > 0:
            self._look_again = remaining
            return False
        return True

    async def _inject(
        self, configurations: list[tuple[Kind, dict[str, Any] | None]], ca_bundle: str
    ) -> tuple[list[tuple[str, tuple[str, ...]]], list[str], list[str], list[str]]:
        injected: list[tuple[str, tuple[str, ...]]] = []
        missing: list[str] = []
        armed: list[str] = []
        unarmed: list[str] = []
        name = self.settings.configuration
        self._look_again = None
        ready_for = self._ready_for()
        for kind, configuration in configurations:
            if configuration is None:
                # Not an error: the webhook may be disabled or not installed yet; its creation wakes us.
                logger.warning(
                    "webhook certificates: %s %s not found; caBundle will be injected when it exists", kind, name
                )
                missing.append(kind.kind)
                continue
            try:
                wanted = wanted_entries(configuration)
                if wanted is None:
                    drifted = drifted_webhooks(configuration, ca_bundle)
                    updated = inject_ca_bundle(configuration, ca_bundle)
                elif entries_match(live_entries(configuration), wanted, ca_bundle):
                    continue
                elif not live_entries(configuration) and not self._may_arm(ready_for):
                    # Enforced from its first request on only when a webhook pod can answer it.
                    unarmed.append(kind.kind)
                    continue
                else:
                    drifted = [entry["name"] for entry in wanted]
                    updated = armed_copy(configuration, wanted, ca_bundle)
            except (InjectionError, ArmingError) as error:
                raise CertDutyError(str(error)) from None
            if updated is None:
                continue
            try:
                stored = await self.client.replace(kind, updated, field_manager=self._field_manager)
            except ApiError as error:
                if error.conflict or error.not_found:
                    raise _Restart(f"{kind} {name} changed while we wrote it") from error
                raise
            self._remember(stored, kind)
            self.metrics.injections.labels(kind=kind.kind).inc()
            if wanted is not None and not live_entries(configuration):
                armed.append(kind.kind)
                logger.info(
                    "webhook certificates: armed %s %s: a webhook pod is ready, entries %s enforced from now on",
                    kind, name, ", ".join(drifted),
                )  # fmt: skip
            else:
                logger.info(
                    "webhook certificates: injected caBundle into %s %s (entries %s)", kind, name, ", ".join(drifted)
                )
            injected.append((kind.kind, tuple(drifted)))
        if unarmed:
            logger.info(
                "webhook certificates: %s %s not armed yet: no webhook endpoint ready for %.0f s",
                " and ".join(unarmed), name, self.settings.arm_delay,
            )  # fmt: skip
        return injected, missing, armed, unarmed

    async def _write_secrets(self, state: _State, certs: Certificates) -> list[str]:
        settings = self.settings
        written: list[str] = []
        if state.ca_secret is None or state.ca is None or certs.ca is not state.ca:
            desired = build_ca_secret(
                name=settings.ca_secret, namespace=settings.namespace, ca=certs.ca, labels=SECRET_LABELS
            )
            await self._write_secret(state.ca_secret, desired)
            written.append(settings.ca_secret)
        if state.tls_secret is None or state.bundle is None or certs.bundle is not state.bundle:
            desired = build_serving_secret(
                name=settings.tls_secret, namespace=settings.namespace, bundle=certs.bundle, labels=SECRET_LABELS
            )
            await self._write_secret(state.tls_secret, desired)
            written.append(settings.tls_secret)
        return written

    async def _write_secret(self, existing: dict[str, Any] | None, desired: dict[str, Any]) -> None:
        name = meta_text(desired, "name")
        try:
            if existing is None:
                stored = await self.client.create(SECRET, desired, field_manager=self._field_manager)
                logger.info("webhook certificates: created Secret %s/%s", self.settings.namespace, name)
            else:
                stored = await self.client.replace(
                    SECRET, merged_secret(existing, desired, labels=SECRET_LABELS), field_manager=self._field_manager
                )
                logger.info("webhook certificates: updated Secret %s/%s", self.settings.namespace, name)
        except ApiError as error:
            if error.conflict or error.not_found:  # AlreadyExists is a 409 too
                raise _Restart(f"Secret {self.settings.namespace}/{name} changed while we wrote it") from error
            raise
        self._remember(stored, SECRET)

