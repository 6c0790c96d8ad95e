"""When to renew the serving certificate and the CA: pure policy over certificate dates, no I/O.

The cycle (cert-controller's numbers): the CA lives ten years and is replaced a year before it expires;
the serving certificate lives a year and is replaced 90 days before it expires, or at once when it no
longer fits (wrong names, not signed by the current CA). A replaced CA is not dropped: it stays in the
published bundle (`ca.crt`, the webhook configurations' `caBundle`) until it expires itself, so the
bundle holds old and new CA during the overlap, and a serving certificate signed by either verifies while
the mounted Secret and the API server's view of `caBundle` catch up at different speeds.

The caller must publish the bundle (inject `caBundle`) no later than it starts serving a certificate
signed by a new CA; `certs/lifecycle.py` produces both in one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from cryptography import x509

from certs.authority import CA_VALIDITY, SERVING_VALIDITY
from certs.bundle import fingerprint, is_issued_by, san_strings

SERVING_RENEW_BEFORE: Final = timedelta(days=90)
CA_RENEW_BEFORE: Final = timedelta(days=365)


@dataclass(frozen=True)
class RotationPolicy:
    serving_validity: timedelta = SERVING_VALIDITY
    serving_renew_before: timedelta = SERVING_RENEW_BEFORE
    ca_validity: timedelta = CA_VALIDITY
    ca_renew_before: timedelta = CA_RENEW_BEFORE

    def __post_init__(self) -> None:
        if not timedelta(0) < self.serving_renew_before < self.serving_validity:
            raise ValueError("serving_renew_before must be positive and shorter than serving_validity")
        if not timedelta(0) < self.ca_renew_before < self.ca_validity:
            raise ValueError("ca_renew_before must be positive and shorter than ca_validity")
        # A serving certificate never outlives its CA (authority.py clamps it), so the CA must be
        # replaced before a fresh serving certificate would already be due for renewal.
        if self.ca_renew_before <= self.serving_renew_before:
            raise ValueError("ca_renew_before must be longer than serving_renew_before")


DEFAULT_POLICY: Final = RotationPolicy()


@dataclass(frozen=True)
class RotationPlan:
    new_ca: bool
    new_serving: bool
    # CAs to keep publishing besides a new one: still valid, de-duplicated, newest first.
    keep_cas: tuple[x509.Certificate, ...]
    # Why something changes, one short sentence each (for events and logs).
    reasons: tuple[str, ...]
    # True when the published bundle differs from `keep_cas` even if nothing is issued (an expired CA
    # dropped, the current CA missing from it).
    bundle_changed: bool

    @property
    def changed(self) -> bool:
        return self.new_ca or self.new_serving or self.bundle_changed


def _is_current(cert: x509.Certificate, now: datetime) -> bool:
    return cert.not_valid_before_utc <= now < cert.not_valid_after_utc


def _ca_reason(ca: x509.Certificate | None, *, now: datetime, policy: RotationPolicy) -> str | None:
    if ca is None:
        return "no CA yet"
    if now >= ca.not_valid_after_utc:
        return "the CA has expired"
    if now < ca.not_valid_before_utc:
        return "the CA is not valid yet"
    if now >= ca.not_valid_after_utc - policy.ca_renew_before:
        return f"the CA expires within {policy.ca_renew_before.days} days"
    return None


def _serving_reason(
    serving: x509.Certificate | None,
    *,
    signer: x509.Certificate,
    sans: Sequence[str],
    now: datetime,
    policy: RotationPolicy,
) -> str | None:
    if serving is None:
        return "no usable serving certificate"
    if not _is_current(serving, now):
        return "the serving certificate is outside its validity period"
    if now >= serving.not_valid_after_utc - policy.serving_renew_before:
        return f"the serving certificate expires within {policy.serving_renew_before.days} days"
    if not is_issued_by(serving, signer):
        return "the serving certificate is not signed by the current CA"
    if san_strings(serving) != frozenset(sans):
        return "the serving certificate's names differ from the wanted ones"
    return None


def plan_rotation(
    *,
    ca: x509.Certificate | None,
    published: Sequence[x509.Certificate],
    serving: x509.Certificate | None,
    sans: Sequence[str],
    now: datetime,
    policy: RotationPolicy = DEFAULT_POLICY,
) -> RotationPlan:
    """Decide what to issue.

    `ca` is the CA whose private key we hold (None when there is none), `published` the CAs in the current
    bundle, `serving` the current serving certificate (None when missing or unusable, e.g. its key does not
    match), `sans` the exact names it must carry.
    """
    reasons: list[str] = []
    ca_reason = _ca_reason(ca, now=now, policy=policy)
    if ca is None or ca_reason is not None:
        new_ca = new_serving = True
        reasons += [ca_reason or "no CA yet", "a new CA signs a new serving certificate"]
    else:
        new_ca = False
        serving_reason = _serving_reason(serving, signer=ca, sans=sans, now=now, policy=policy)
        new_serving = serving_reason is not None
        if serving_reason is not None:
            reasons.append(serving_reason)

    candidates = [*published, *([ca] if ca is not None else [])]
    seen: set[str] = set()
    keep: list[x509.Certificate] = []
    for cert in sorted(candidates, key=lambda c: c.not_valid_before_utc, reverse=True):
        digest = fingerprint(cert)
        if digest in seen or now >= cert.not_valid_after_utc:
            continue
        seen.add(digest)
        keep.append(cert)
    published_ids = {fingerprint(cert) for cert in published}
    # Order in the bundle does not matter to a verifier, so only membership counts as a change.
    bundle_changed = published_ids != seen
    dropped = len(published_ids - seen)
    if dropped:
        reasons.append(f"{dropped} expired CA(s) dropped from the bundle")
    return RotationPlan(
        new_ca=new_ca,
        new_serving=new_serving,
        keep_cas=tuple(keep),
        reasons=tuple(reasons),
        bundle_changed=bundle_changed,
    )
