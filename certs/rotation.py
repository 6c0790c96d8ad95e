"""When to renew the serving certificate and the CA, and which CAs to trust: pure policy over certificate dates,
so that a fake clock tests it. The cycle, the trust bundle's one-day overlap and the recovery after deleted
Secrets: docs/design/certificates.md §4, §6. The caller publishes the bundle no later than it serves a
certificate of a new CA (`certs/lifecycle.py` produces both in one step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from cryptography import x509

from certs.authority import BACKDATE, CA_VALIDITY, SERVING_VALIDITY
from certs.bundle import fingerprint, is_ca, is_issued_by, san_strings

SERVING_RENEW_BEFORE: Final = timedelta(days=90)
CA_RENEW_BEFORE: Final = timedelta(days=365)
# Minutes would do (kubelet sync ~1 min, webhook file check 10 s); a day also covers a webhook that failed to
# reload and was restarted by hand, and costs nothing but a few hundred bytes of caBundle.
CA_OVERLAP: Final = timedelta(days=1)
# CAs taken over from an injected caBundle: ours are one or two; more is someone else's doing.
MAX_INHERITED_CAS: Final = 4


@dataclass(frozen=True)
class RotationPolicy:
    serving_validity: timedelta = SERVING_VALIDITY
    serving_renew_before: timedelta = SERVING_RENEW_BEFORE
    ca_validity: timedelta = CA_VALIDITY
    ca_renew_before: timedelta = CA_RENEW_BEFORE
    ca_overlap: timedelta = CA_OVERLAP

    def __post_init__(self) -> None:
        if not timedelta(0) < self.serving_renew_before < self.serving_validity:
            raise ValueError("serving_renew_before must be positive and shorter than serving_validity")
        if not timedelta(0) < self.ca_renew_before < self.ca_validity:
            raise ValueError("ca_renew_before must be positive and shorter than ca_validity")
        # A serving certificate never outlives its CA (authority.py clamps it), so the CA must be
        # replaced before a fresh serving certificate would already be due for renewal.
        if self.ca_renew_before <= self.serving_renew_before:
            raise ValueError("ca_renew_before must be longer than serving_renew_before")
        # Counted from a notBefore that is backdated: a shorter overlap would be over as soon as it began.
        if self.ca_overlap <= BACKDATE:
            raise ValueError(f"ca_overlap must be longer than the {BACKDATE} certificates are backdated")


DEFAULT_POLICY: Final = RotationPolicy()


@dataclass(frozen=True)
class RotationPlan:
    new_ca: bool
    new_serving: bool
    # CAs to keep publishing besides a new one: still valid, de-duplicated, newest first.
    keep_cas: tuple[x509.Certificate, ...]
    # Why something changes, one short sentence each (for events and logs).
    reasons: tuple[str, ...]
    # True when the published bundle differs from `keep_cas` even if nothing is issued (an expired or
    # replaced CA dropped, the current CA missing from it).
    bundle_changed: bool
    # CAs in `keep_cas` that came only from `trusted` (the injected caBundle), for the log.
    inherited: tuple[x509.Certificate, ...] = ()

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


def inheritable_cas(
    trusted: Sequence[x509.Certificate], *, now: datetime, limit: int = MAX_INHERITED_CAS
) -> list[x509.Certificate]:
    """The CA certificates of `trusted` that are valid at `now`, de-duplicated, newest first, at most `limit`."""
    seen: set[str] = set()
    found: list[x509.Certificate] = []
    for cert in sorted(trusted, key=lambda c: c.not_valid_before_utc, reverse=True):
        digest = fingerprint(cert)
        if digest in seen or not is_ca(cert) or not _is_current(cert, now):
            continue
        seen.add(digest)
        found.append(cert)
    return found[:limit]


def _overlap_open(
    serving: x509.Certificate | None, *, new_serving: bool, now: datetime, policy: RotationPolicy
) -> bool:
    """Whether a pod may still serve a certificate signed by a CA other than the current one."""
    if new_serving or serving is None:
        return True  # a certificate is being replaced right now: the overlap starts
    return now < serving.not_valid_before_utc + policy.ca_overlap


def _hours(span: timedelta) -> str:
    return f"{span.total_seconds() / 3600:g} h"


def plan_rotation(
    *,
    ca: x509.Certificate | None,
    published: Sequence[x509.Certificate],
    serving: x509.Certificate | None,
    sans: Sequence[str],
    now: datetime,
    policy: RotationPolicy = DEFAULT_POLICY,
    trusted: Sequence[x509.Certificate] = (),
) -> RotationPlan:
    """Decide what to issue and which CAs to publish.

    `ca` is the CA whose private key we hold (None when there is none), `published` the CAs in the current
    bundle, `serving` the current serving certificate (None when missing or unusable, e.g. its key does not
    match), `sans` the exact names it must carry, `trusted` the CAs the API server trusts now (the injected
    caBundle), used only when `serving` is None or `published` empty.
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

    signer = None if new_ca else ca
    overlap = _overlap_open(serving, new_serving=new_serving, now=now, policy=policy)
    own = [*published, *([ca] if ca is not None else [])]
    own_ids = {fingerprint(cert) for cert in own}
    # The pods may serve what no Secret of ours describes any more: fall back on what the API server trusts.
    unknown_served = serving is None or not published
    others = [cert for cert in trusted if fingerprint(cert) not in own_ids] if unknown_served else []
    signer_id = fingerprint(signer) if signer is not None else None
    seen: set[str] = set()
    keep: list[x509.Certificate] = []
    for cert in sorted([*own, *inheritable_cas(others, now=now)], key=lambda c: c.not_valid_before_utc,
                       reverse=True):  # fmt: skip
        digest = fingerprint(cert)
        if digest in seen:
            continue
        seen.add(digest)
        if now < cert.not_valid_after_utc and (digest == signer_id or overlap):
            keep.append(cert)
    kept_ids = {fingerprint(cert) for cert in keep}
    published_ids = {fingerprint(cert) for cert in published}
    # Order in the bundle does not matter to a verifier, so only membership counts as a change.
    bundle_changed = published_ids != kept_ids
    dropped_expired = len({fingerprint(c) for c in published if now >= c.not_valid_after_utc})
    if dropped_expired:
        reasons.append(f"{dropped_expired} expired CA(s) dropped from the bundle")
    dropped_retired = len(published_ids - kept_ids) - dropped_expired
    if dropped_retired:
        reasons.append(
            f"{dropped_retired} replaced CA(s) dropped from the bundle: the serving certificate has been in use "
            f"for {_hours(policy.ca_overlap)}"
        )
    kept_inherited = tuple(cert for cert in keep if fingerprint(cert) not in own_ids)
    if kept_inherited:
        reasons.append(
            f"{len(kept_inherited)} CA(s) the webhook configurations still trust kept until the new serving "
            f"certificate has been in use for {_hours(policy.ca_overlap)}: the webhook may still serve one they signed"
        )
    return RotationPlan(
        new_ca=new_ca,
        new_serving=new_serving,
        keep_cas=tuple(keep),
        reasons=tuple(reasons),
        bundle_changed=bundle_changed,
        inherited=kept_inherited,
    )
