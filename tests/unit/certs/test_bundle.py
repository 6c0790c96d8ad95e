"""PEM decoding errors name what is wrong; a bundle reports why it would not serve."""

from __future__ import annotations

import base64
import re
from datetime import datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from certs.authority import KeyPair, create_ca, issue_serving_cert
from certs.bundle import (
    CertBundle,
    CertificateError,
    certificates_pem,
    is_ca,
    load_certificates,
    load_private_key,
    read_certificates_leniently,
)


def _bundle(ca: KeyPair, now: datetime, *, extra_cas: tuple[KeyPair, ...] = ()) -> CertBundle:
    serving = issue_serving_cert(ca=ca, service="svc", namespace="ns", now=now)
    return CertBundle(
        ca_crt=certificates_pem([ca.cert, *(other.cert for other in extra_cas)]),
        tls_crt=serving.cert_pem,
        tls_key=serving.key_pem,
    )


def test_all_certificates_of_a_pem_chain_are_read_in_order(ca: KeyPair, now: datetime) -> None:
    other = create_ca(now=now, common_name="second")
    assert load_certificates(certificates_pem([ca.cert, other.cert]), what="ca.crt") == [ca.cert, other.cert]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "ca.crt is empty"),
        (b"  \n", "ca.crt is empty"),
        (b"hello", "ca.crt is not PEM-encoded X.509 certificates"),
        (b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "ca.crt is not PEM-encoded"),
    ],
)
def test_bad_certificate_pem_is_named(data: bytes, message: str) -> None:
    with pytest.raises(CertificateError, match=re.escape(message)):
        load_certificates(data, what="ca.crt")


def test_bad_key_pem_is_named(ca: KeyPair) -> None:
    with pytest.raises(CertificateError, match=re.escape("tls.key is not an unencrypted PEM private key")):
        load_private_key(ca.cert_pem, what="tls.key")
    with pytest.raises(CertificateError, match=re.escape("tls.key is empty")):
        load_private_key(b"", what="tls.key")


def test_expiry_inspection(ca: KeyPair, now: datetime) -> None:
    bundle = _bundle(ca, now)
    assert bundle.serving_not_after == now + timedelta(days=365)
    assert bundle.ca_not_after == now + timedelta(days=3650)
    assert bundle.serving_expires_in(now=now + timedelta(days=300)) == timedelta(days=65)
    assert bundle.serving_expires_in(now=now + timedelta(days=366)) == timedelta(days=-1)


def test_ca_not_after_is_the_longest_lived_ca(ca: KeyPair, now: datetime) -> None:
    newer = create_ca(now=now + timedelta(days=100))
    bundle = _bundle(ca, now, extra_cas=(newer,))
    assert bundle.ca_not_after == now + timedelta(days=3750)


def test_ca_bundle_base64_is_the_pem_of_ca_crt(ca: KeyPair, now: datetime) -> None:
    bundle = _bundle(ca, now)
    assert base64.b64decode(bundle.ca_bundle_base64()) == ca.cert_pem


def test_a_good_bundle_has_no_problems(ca: KeyPair, now: datetime) -> None:
    assert _bundle(ca, now).problems(now=now, sans=["svc.ns.svc", "svc.ns.svc.cluster.local"]) == []


def test_problems_are_each_named(ca: KeyPair, now: datetime) -> None:
    good = _bundle(ca, now)
    stranger = create_ca(now=now)
    foreign_key = create_ca(now=now).key_pem
    broken = CertBundle(ca_crt=stranger.cert_pem, tls_crt=good.tls_crt, tls_key=foreign_key)
    later = now + timedelta(days=400)
    assert broken.problems(now=later, sans=["svc.ns.svc", "localhost"]) == [
        "tls.key does not belong to the certificate in tls.crt",
        "tls.crt is not signed by any CA in ca.crt",
        f"tls.crt expired at {(now + timedelta(days=365)).isoformat()}",
        "tls.crt is not valid for localhost",
    ]


def test_a_bundle_trusted_through_the_second_ca_is_fine(ca: KeyPair, now: datetime) -> None:
    newer = create_ca(now=now)
    bundle = _bundle(newer, now, extra_cas=(ca,))
    assert bundle.problems(now=now) == []


def test_unparseable_bundle_reports_the_file(ca: KeyPair, now: datetime) -> None:
    good = _bundle(ca, now)
    problems = CertBundle(ca_crt=b"junk", tls_crt=good.tls_crt, tls_key=good.tls_key).problems(now=now)
    assert len(problems) == 1
    assert problems[0].startswith("ca.crt is not PEM-encoded X.509 certificates")


# ------------------------------------------------------------------------------- lenient reading, CA test
BROKEN_BLOCK = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"


def test_lenient_reading_keeps_the_good_blocks_and_names_the_bad(ca: KeyPair, now: datetime) -> None:
    other = create_ca(now=now, common_name="second")
    pem = b"".join([ca.cert_pem, BROKEN_BLOCK, b"comment lines are fine\n", ca.key_pem, other.cert_pem])
    certs, problems = read_certificates_leniently(pem, what="caBundle")
    assert certs == [ca.cert, other.cert]
    assert len(problems) == 2
    assert problems[0].startswith("caBundle: PEM block 2 is not an X.509 certificate")
    assert problems[1] == "caBundle: PEM block 3 is a PRIVATE KEY, not a CERTIFICATE"


@pytest.mark.parametrize("data", [b"", b"hello", b"-----BEGIN CERTIFICATE-----\nno end line"])
def test_lenient_reading_of_no_pem_at_all(data: bytes) -> None:
    assert read_certificates_leniently(data, what="caBundle") == ([], ["caBundle holds no PEM block"])


def test_is_ca(ca: KeyPair, now: datetime) -> None:
    leaf = issue_serving_cert(ca=ca, service="svc", namespace="ns", now=now)
    assert is_ca(ca.cert)
    assert not is_ca(leaf.cert)
    # A certificate without basicConstraints at all is no CA either.
    bare = (
        x509.CertificateBuilder()
        .subject_name(ca.cert.subject)
        .issuer_name(ca.cert.subject)
        .public_key(ca.key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=1))
        .sign(ca.key, hashes.SHA256())
    )
    assert not is_ca(bare)
