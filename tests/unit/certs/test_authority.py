"""The CA and serving certificates have the shape kube-apiserver verifies, and verify for real."""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import KeyPair, create_ca, issue_serving_cert, parse_san, serving_dns_names, serving_sans
from certs.bundle import CertificateError, is_issued_by, san_strings


def test_ca_is_a_p256_ca_valid_ten_years_backdated_one_hour(ca: KeyPair, now: datetime) -> None:
    cert = ca.cert
    assert isinstance(ca.key, ec.EllipticCurvePrivateKey)
    assert ca.key.curve.name == "secp256r1"
    assert cert.not_valid_before_utc == now - timedelta(hours=1)
    assert cert.not_valid_after_utc == now + timedelta(days=3650)
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value.ca
    assert constraints.value.path_length == 0
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign
    assert usage.crl_sign
    assert cert.subject == cert.issuer
    assert is_issued_by(cert, cert)


def test_serving_cert_names_the_service_and_is_signed_by_the_ca(ca: KeyPair, now: datetime) -> None:
    serving = issue_serving_cert(ca=ca, service="mb-webhook", namespace="kthena", now=now)
    cert = serving.cert
    assert san_strings(cert) == {"mb-webhook.kthena.svc", "mb-webhook.kthena.svc.cluster.local"}
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "mb-webhook.kthena.svc"
    assert cert.not_valid_before_utc == now - timedelta(hours=1)
    assert cert.not_valid_after_utc == now + timedelta(days=365)
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert is_issued_by(cert, ca.cert)
    assert not is_issued_by(cert, create_ca(now=now).cert)


def test_extra_sans_are_ip_addresses_or_dns_names(ca: KeyPair, now: datetime) -> None:
    serving = issue_serving_cert(
        ca=ca, service="svc", namespace="ns", extra_sans=["127.0.0.1", "::1", "localhost"], now=now
    )
    sans = serving.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert sans.get_values_for_type(x509.DNSName) == ["svc.ns.svc", "svc.ns.svc.cluster.local", "localhost"]


def test_serving_cert_never_outlives_its_ca(now: datetime) -> None:
    short_ca = create_ca(now=now, validity=timedelta(days=30))
    serving = issue_serving_cert(ca=short_ca, service="svc", namespace="ns", now=now)
    assert serving.cert.not_valid_after_utc == now + timedelta(days=30)


def test_expired_ca_cannot_issue(ca: KeyPair, now: datetime) -> None:
    with pytest.raises(CertificateError, match="the CA expired"):
        issue_serving_cert(ca=ca, service="svc", namespace="ns", now=now + timedelta(days=3651))


@pytest.mark.parametrize(
    ("service", "namespace", "bad"),
    [("Webhook", "ns", "service name 'Webhook'"), ("svc", "ns_1", "namespace name 'ns_1'"), ("", "ns", "service")],
)
def test_service_and_namespace_must_be_dns_labels(service: str, namespace: str, bad: str) -> None:
    with pytest.raises(CertificateError, match=re.escape(bad)):
        serving_dns_names(service=service, namespace=namespace)


@pytest.mark.parametrize("value", ["foo bar", "UPPER.example", "-leading.example", "a..b", "x" * 254, ""])
def test_bad_extra_san_is_refused_by_name(value: str) -> None:
    with pytest.raises(CertificateError, match="neither an IP address nor a lower-case DNS name"):
        parse_san(value)


def test_wildcard_dns_san_is_accepted() -> None:
    assert parse_san("*.example.com") == x509.DNSName("*.example.com")


def test_serving_sans_drop_repeats_and_keep_order() -> None:
    assert serving_sans(service="a", namespace="b", extra_sans=["a.b.svc", "10.0.0.1", "10.0.0.1"]) == (
        "a.b.svc",
        "a.b.svc.cluster.local",
        "10.0.0.1",
    )


def test_naive_clock_is_refused() -> None:
    with pytest.raises(CertificateError, match="timezone-aware"):
        create_ca(now=datetime(2026, 1, 1))  # a naive datetime is the point


def test_key_pair_round_trips_through_pem_and_refuses_a_foreign_key(ca: KeyPair, now: datetime) -> None:
    again = KeyPair.from_pem(ca.cert_pem, ca.key_pem)
    assert again.cert == ca.cert
    other = create_ca(now=now)
    with pytest.raises(CertificateError, match="key does not belong"):
        KeyPair.from_pem(ca.cert_pem, other.key_pem)


@pytest.fixture
def tls_server(tmp_path: Path, ca: KeyPair) -> Iterator[int]:
    """A one-shot TLS server on loopback presenting a serving certificate for svc.ns.svc."""
    serving = issue_serving_cert(ca=ca, service="svc", namespace="ns", extra_sans=["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(serving.cert_pem)
    (tmp_path / "tls.key").write_bytes(serving.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            connection, _ = listener.accept()
            try:
                with context.wrap_socket(connection, server_side=True) as tls:
                    tls.sendall(b"ok")
            except (ssl.SSLError, OSError):
                connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    listener.close()
    thread.join(timeout=5)


def test_a_real_tls_client_trusting_the_ca_accepts_the_service_name(tls_server: int, ca: KeyPair) -> None:
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    with (
        socket.create_connection(("127.0.0.1", tls_server)) as raw,
        client.wrap_socket(raw, server_hostname="svc.ns.svc") as tls,
    ):
        assert tls.recv(2) == b"ok"
    # The same server under a name the certificate does not carry is refused by hostname checking.
    with (
        socket.create_connection(("127.0.0.1", tls_server)) as raw,
        pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"),
    ):
        client.wrap_socket(raw, server_hostname="other.ns.svc")
