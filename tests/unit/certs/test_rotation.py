"""Rotation policy, by the calendar: serving renewed 90 days ahead, CA a year ahead with an overlap."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from certs.authority import KeyPair, create_ca, issue_serving_cert
from certs.rotation import RotationPolicy, plan_rotation

SANS = ("svc.ns.svc", "svc.ns.svc.cluster.local")
DAY = timedelta(days=1)


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


def test_old_ca_stays_published_until_it_expires(ca: KeyPair, now: datetime) -> None:
    rotation_day = now + 3300 * DAY
    new_ca = create_ca(now=rotation_day)
    serving = _serving(new_ca, rotation_day).cert
    # Just after rotation the bundle holds both; the new one first.
    plan = plan_rotation(
        ca=new_ca.cert, published=[ca.cert, new_ca.cert], serving=serving, sans=SANS, now=rotation_day + DAY
    )
    assert plan.keep_cas == (new_ca.cert, ca.cert)
    assert not plan.changed
    # Once the old CA has expired it is dropped, and that alone is a change to publish.
    after_expiry = now + 3651 * DAY
    serving_then = _serving(new_ca, after_expiry - DAY).cert
    plan = plan_rotation(
        ca=new_ca.cert, published=[new_ca.cert, ca.cert], serving=serving_then, sans=SANS, now=after_expiry
    )
    assert plan.keep_cas == (new_ca.cert,)
    assert plan.bundle_changed
    assert not plan.new_serving
    assert plan.reasons == ("1 expired CA(s) dropped from the bundle",)


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
