"""One lifecycle step issues exactly what the policy says and keeps the rest byte for byte; with both Secrets lost it
keeps trusting the CAs the API server trusts, for the overlap."""

from __future__ import annotations

from datetime import datetime, timedelta

from certs.authority import KeyPair, create_ca
from certs.bundle import CertBundle, is_issued_by, san_strings
from certs.lifecycle import ensure_certificates

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
SANS = ["svc.ns.svc", "svc.ns.svc.cluster.local"]


def test_first_run_creates_everything(now: datetime) -> None:
    made = ensure_certificates(ca=None, bundle=None, service="svc", namespace="ns", now=now)
    assert made.plan.new_ca
    assert made.bundle.cas == [made.ca.cert]
    assert is_issued_by(made.bundle.serving_cert, made.ca.cert)
    assert made.bundle.problems(now=now, sans=["svc.ns.svc", "svc.ns.svc.cluster.local"]) == []


def test_steady_state_returns_the_same_objects(now: datetime) -> None:
    first = ensure_certificates(ca=None, bundle=None, service="svc", namespace="ns", now=now)
    again = ensure_certificates(ca=first.ca, bundle=first.bundle, service="svc", namespace="ns", now=now + DAY)
    assert not again.plan.changed
    assert again.ca is first.ca
    assert again.bundle is first.bundle


def test_serving_renewal_keeps_the_ca(now: datetime) -> None:
    first = ensure_certificates(ca=None, bundle=None, service="svc", namespace="ns", now=now)
    later = now + 300 * DAY
    renewed = ensure_certificates(ca=first.ca, bundle=first.bundle, service="svc", namespace="ns", now=later)
    assert renewed.plan.new_serving
    assert not renewed.plan.new_ca
    assert renewed.ca is first.ca
    assert renewed.bundle.ca_crt == first.bundle.ca_crt
    assert renewed.bundle.serving_not_after == later + 365 * DAY


def test_ca_rotation_publishes_old_and_new(now: datetime) -> None:
    first = ensure_certificates(ca=None, bundle=None, service="svc", namespace="ns", now=now)
    later = now + 3300 * DAY
    rotated = ensure_certificates(ca=first.ca, bundle=first.bundle, service="svc", namespace="ns", now=later)
    assert rotated.plan.new_ca
    assert rotated.bundle.cas == [rotated.ca.cert, first.ca.cert]
    assert is_issued_by(rotated.bundle.serving_cert, rotated.ca.cert)
    assert rotated.bundle.problems(now=later) == []


def test_a_key_that_does_not_match_forces_a_new_serving_cert(ca: KeyPair, now: datetime) -> None:
    first = ensure_certificates(ca=ca, bundle=None, service="svc", namespace="ns", now=now)
    broken = CertBundle(ca_crt=first.bundle.ca_crt, tls_crt=first.bundle.tls_crt, tls_key=ca.key_pem)
    fixed = ensure_certificates(ca=ca, bundle=broken, service="svc", namespace="ns", now=now)
    assert fixed.plan.new_serving
    assert fixed.plan.reasons == ("no usable serving certificate",)
    assert fixed.bundle.problems(now=now) == []


def test_changed_extra_sans_reissue(ca: KeyPair, now: datetime) -> None:
    first = ensure_certificates(ca=ca, bundle=None, service="svc", namespace="ns", now=now)
    wider = ensure_certificates(
        ca=ca, bundle=first.bundle, service="svc", namespace="ns", extra_sans=["127.0.0.1"], now=now
    )
    assert wider.plan.new_serving
    assert "127.0.0.1" in san_strings(wider.bundle.serving_cert)


def test_losing_both_secrets_keeps_trusting_the_injected_ca(now: datetime) -> None:
    """The CA Secret and the serving Secret are gone; the webhook configurations still carry the old CA and the
    pods still serve the old certificate. The new bundle must verify both the old and the new certificate."""
    before = ensure_certificates(ca=None, bundle=None, service="svc", namespace="ns", now=now)
    later = now + 30 * DAY
    after = ensure_certificates(
        ca=None, bundle=None, service="svc", namespace="ns", now=later, trusted=before.bundle.cas
    )
    assert after.plan.new_ca
    assert after.bundle.cas == [after.ca.cert, before.ca.cert]
    still_served = CertBundle(ca_crt=after.bundle.ca_crt, tls_crt=before.bundle.tls_crt, tls_key=before.bundle.tls_key)
    assert still_served.problems(now=later, sans=SANS) == []
    assert after.bundle.problems(now=later, sans=SANS) == []

    # The next pass reads the new Secrets: nothing changes during the overlap...
    calm = ensure_certificates(ca=after.ca, bundle=after.bundle, service="svc", namespace="ns", now=later + 22 * HOUR)
    assert not calm.plan.changed
    # ...and a day after the new certificate's notBefore the old CA leaves; the certificate stays.
    done = ensure_certificates(ca=after.ca, bundle=after.bundle, service="svc", namespace="ns", now=later + 23 * HOUR)
    assert done.plan.bundle_changed
    assert not done.plan.new_serving
    assert done.bundle.cas == [after.ca.cert]
    assert done.bundle.tls_crt == after.bundle.tls_crt


def test_without_an_injected_bundle_only_the_new_ca_is_published(now: datetime) -> None:
    made = ensure_certificates(ca=None, bundle=None, service="svc", namespace="ns", now=now, trusted=[])
    assert made.bundle.cas == [made.ca.cert]


def test_the_injected_bundle_does_not_count_while_the_serving_secret_is_usable(ca: KeyPair, now: datetime) -> None:
    first = ensure_certificates(ca=ca, bundle=None, service="svc", namespace="ns", now=now)
    stranger = create_ca(now=now)
    again = ensure_certificates(
        ca=ca, bundle=first.bundle, service="svc", namespace="ns", now=now, trusted=[stranger.cert, ca.cert]
    )
    assert not again.plan.changed
    assert again.bundle is first.bundle
