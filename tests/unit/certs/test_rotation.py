"""Rotation policy, by the calendar: serving renewed 90 days ahead, CA a year ahead, a replaced CA trusted for a day
after the new serving certificate (or until it expires), and what the API server trusts already."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from cryptography import x509

from certs.authority import KeyPair, create_ca, issue_serving_cert
from certs.rotation import MAX_INHERITED_CAS, RotationPolicy, inheritable_cas, plan_rotation

SANS = ("svc.ns.svc", "svc.ns.svc.cluster.local")
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def _serving(ca: KeyPair, now: datetime, *, extra: tuple[str, ...] = ()) -> KeyPair:
    return issue_serving_cert(ca=ca, service="svc", namespace="ns", extra_sans=extra, now=now)


def test_nothing_to_do_for_a_fresh_pair(ca: KeyPair, now: datetime) -> None:
    plan = plan_rotation(ca=ca.cert, published=[ca.cert], serving=_serving(ca, now).cert, sans=SANS, now=now)
    assert not plan.changed
    assert plan.reasons == ()
    assert plan.keep_cas == (ca.cert,)


@pytest.mark.parametrize(
    ("age_days", "renew"),
    [(0, False), (274, False), (275, True), (300, True), (365, True), (400, True)],
)
def test_serving_cert_is_renewed_90_days_before_expiry(ca: KeyPair, now: datetime, age_days: int, renew: bool) -> None:
    serving = _serving(ca, now).cert  # valid for 365 days from `now`
    later = now + timedelta(days=age_days)
    plan = plan_rotation(ca=ca.cert, published=[ca.cert], serving=serving, sans=SANS, now=later)
    assert plan.new_serving is renew
    assert not plan.new_ca


def test_serving_renewal_reason_says_why(ca: KeyPair, now: datetime) -> None:
    plan = plan_rotation(
        ca=ca.cert, published=[ca.cert], serving=_serving(ca, now).cert, sans=SANS, now=now + 280 * DAY
    )
    assert plan.reasons == ("the serving certificate expires within 90 days",)


def test_missing_or_unusable_serving_cert_is_issued(ca: KeyPair, now: datetime) -> None:
    plan = plan_rotation(ca=ca.cert, published=[ca.cert], serving=None, sans=SANS, now=now)
    assert plan.new_serving
    assert plan.reasons == ("no usable serving certificate",)


def test_serving_cert_with_other_names_is_reissued(ca: KeyPair, now: datetime) -> None:
    serving = _serving(ca, now, extra=("127.0.0.1",)).cert
    plan = plan_rotation(ca=ca.cert, published=[ca.cert], serving=serving, sans=SANS, now=now)
    assert plan.new_serving
    assert plan.reasons == ("the serving certificate's names differ from the wanted ones",)


def test_serving_cert_from_a_ca_we_do_not_hold_is_reissued(ca: KeyPair, now: datetime) -> None:
    stranger = create_ca(now=now)
    plan = plan_rotation(ca=ca.cert, published=[ca.cert], serving=_serving(stranger, now).cert, sans=SANS, now=now)
    assert plan.new_serving
    assert plan.reasons == ("the serving certificate is not signed by the current CA",)


def test_no_ca_means_new_ca_and_serving(now: datetime) -> None:
    plan = plan_rotation(ca=None, published=[], serving=None, sans=SANS, now=now)
    assert plan.new_ca
    assert plan.new_serving
    assert plan.reasons == ("no CA yet", "a new CA signs a new serving certificate")


@pytest.mark.parametrize(
    ("age_days", "rotate"),
    [(0, False), (3284, False), (3285, True), (3649, True), (3651, True)],
)
def test_ca_is_replaced_a_year_before_expiry(ca: KeyPair, now: datetime, age_days: int, rotate: bool) -> None:
    later = now + timedelta(days=age_days)
    serving = _serving(ca, later - 10 * DAY).cert if age_days < 3650 else None
    plan = plan_rotation(ca=ca.cert, published=[ca.cert], serving=serving, sans=SANS, now=later)
    assert plan.new_ca is rotate
    if rotate:
        assert plan.new_serving


def test_replaced_ca_stays_published_for_a_day_after_the_new_serving_cert(ca: KeyPair, now: datetime) -> None:
    rotation_day = now + 3300 * DAY
    new_ca = create_ca(now=rotation_day)
    serving = _serving(new_ca, rotation_day).cert  # notBefore: an hour before rotation_day
    # At the rotation the old CA stays, the new one first.
    at_rotation = plan_rotation(ca=ca.cert, published=[ca.cert], serving=_serving(ca, now).cert, sans=SANS,
                                now=rotation_day)  # fmt: skip
    assert at_rotation.new_ca
    assert at_rotation.keep_cas == (ca.cert,)
    # 22 hours later a pod may in theory still serve the old certificate: nothing changes.
    plan = plan_rotation(
        ca=new_ca.cert, published=[new_ca.cert, ca.cert], serving=serving, sans=SANS, now=rotation_day + 22 * HOUR
    )
    assert plan.keep_cas == (new_ca.cert, ca.cert)
    assert not plan.changed
    # A day after the new certificate's notBefore the old CA leaves, and that alone is a change to publish.
    plan = plan_rotation(
        ca=new_ca.cert, published=[new_ca.cert, ca.cert], serving=serving, sans=SANS, now=rotation_day + 23 * HOUR
    )
    assert plan.keep_cas == (new_ca.cert,)
    assert plan.bundle_changed
    assert not plan.new_serving
    assert plan.reasons == (
        "1 replaced CA(s) dropped from the bundle: the serving certificate has been in use for 24 h",
    )


def test_an_expired_ca_leaves_even_within_the_overlap(ca: KeyPair, now: datetime) -> None:
    after_expiry = now + 3651 * DAY
    new_ca = create_ca(now=after_expiry - 2 * DAY)
    serving = _serving(new_ca, after_expiry - HOUR).cert  # just issued: the overlap is open
    plan = plan_rotation(ca=new_ca.cert, published=[new_ca.cert, ca.cert], serving=serving, sans=SANS, now=after_expiry)
    assert plan.keep_cas == (new_ca.cert,)
    assert plan.bundle_changed
    assert plan.reasons == ("1 expired CA(s) dropped from the bundle",)


def test_the_overlap_restarts_with_every_new_serving_cert(ca: KeyPair, now: datetime) -> None:
    """A CA the bundle still holds is kept while a serving certificate is being replaced: the pods serve the
    previous one, which it may have signed."""
    other = create_ca(now=now)
    plan = plan_rotation(ca=ca.cert, published=[ca.cert, other.cert], serving=None, sans=SANS, now=now + 30 * DAY)
    assert plan.new_serving
    assert set(plan.keep_cas) == {ca.cert, other.cert}


def test_current_ca_missing_from_the_bundle_is_a_change(ca: KeyPair, now: datetime) -> None:
    plan = plan_rotation(ca=ca.cert, published=[], serving=_serving(ca, now).cert, sans=SANS, now=now)
    assert plan.bundle_changed
    assert plan.keep_cas == (ca.cert,)


def test_duplicate_cas_in_the_bundle_are_kept_once(ca: KeyPair, now: datetime) -> None:
    plan = plan_rotation(ca=ca.cert, published=[ca.cert, ca.cert], serving=_serving(ca, now).cert, sans=SANS, now=now)
    assert plan.keep_cas == (ca.cert,)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"serving_renew_before": timedelta(days=400)},
        {"serving_renew_before": timedelta(0)},
        {"ca_renew_before": timedelta(days=30)},
        {"ca_renew_before": timedelta(days=4000)},
    ],
)
def test_inconsistent_policies_are_refused(kwargs: dict[str, timedelta]) -> None:
    with pytest.raises(ValueError, match="renew_before"):
        RotationPolicy(**kwargs)


@pytest.mark.parametrize("overlap", [timedelta(0), timedelta(hours=1)])
def test_an_overlap_shorter_than_the_backdating_is_refused(overlap: timedelta) -> None:
    with pytest.raises(ValueError, match="ca_overlap must be longer than the 1:00:00 certificates are backdated"):
        RotationPolicy(ca_overlap=overlap)


# ------------------------------------------------------------------- CAs the API server trusts already
def _leaf(ca: KeyPair, now: datetime) -> x509.Certificate:
    return _serving(ca, now).cert


def test_trusted_cas_are_kept_when_no_serving_cert_says_what_is_served(ca: KeyPair, now: datetime) -> None:
    expired = create_ca(now=now - 3651 * DAY).cert
    not_yet = create_ca(now=now + DAY).cert
    trusted = [expired, ca.cert, _leaf(ca, now), not_yet, ca.cert]
    # Both Secrets gone: no CA, no bundle, no serving certificate.
    plan = plan_rotation(ca=None, published=[], serving=None, sans=SANS, now=now, trusted=trusted)
    assert plan.new_ca
    assert plan.keep_cas == (ca.cert,)  # once; not the expired, not-yet-valid or end-entity certificates
    assert plan.inherited == (ca.cert,)
    assert plan.reasons[-1] == (
        "1 CA(s) the webhook configurations still trust kept until the new serving certificate has been in use "
        "for 24 h: the webhook may still serve one they signed"
    )


def test_trusted_cas_count_when_only_the_serving_cert_is_gone(ca: KeyPair, now: datetime) -> None:
    previous = create_ca(now=now - 10 * DAY)
    plan = plan_rotation(ca=ca.cert, published=[], serving=None, sans=SANS, now=now, trusted=[ca.cert, previous.cert])
    assert not plan.new_ca
    assert plan.new_serving
    assert plan.keep_cas == (ca.cert, previous.cert)
    assert plan.inherited == (previous.cert,)  # the CA we hold is ours, not inherited


def test_trusted_cas_are_ignored_while_the_serving_secret_says_what_is_served(ca: KeyPair, now: datetime) -> None:
    """At any other time a CA in the configurations that our bundle lacks is drift (someone pasted it)."""
    stranger = create_ca(now=now)
    plan = plan_rotation(
        ca=ca.cert, published=[ca.cert], serving=_serving(ca, now).cert, sans=SANS, now=now, trusted=[stranger.cert]
    )
    assert plan.keep_cas == (ca.cert,)
    assert plan.inherited == ()
    assert not plan.changed


def test_at_most_four_trusted_cas_are_inherited_newest_first(now: datetime) -> None:
    cas = [create_ca(now=now - age * DAY).cert for age in range(6)]
    assert inheritable_cas(list(reversed(cas)), now=now) == cas[:4]
    plan = plan_rotation(ca=None, published=[], serving=None, sans=SANS, now=now, trusted=cas)
    assert plan.keep_cas == tuple(cas[:4])
    assert MAX_INHERITED_CAS == 4


def test_inherited_cas_leave_after_the_overlap_like_any_replaced_ca(ca: KeyPair, now: datetime) -> None:
    new_ca = create_ca(now=now)
    serving = _serving(new_ca, now).cert
    later = now + 23 * HOUR
    plan = plan_rotation(ca=new_ca.cert, published=[new_ca.cert, ca.cert], serving=serving, sans=SANS, now=later)
    assert plan.keep_cas == (new_ca.cert,)
    assert plan.bundle_changed
