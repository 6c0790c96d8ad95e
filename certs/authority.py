"""A self-signed certificate authority and the webhook's serving certificate.

Keys are ECDSA P-256, not RSA 2048, on purpose:
- kube-apiserver (Go crypto/tls) and every client we meet verify P-256 chains, so nothing is lost;
- a P-256 key is generated in about a millisecond where an RSA 2048 key takes tens to hundreds of
  milliseconds, which keeps rotation in the reconciler and the test suite fast;
- the server's per-handshake signature is several times cheaper with ECDSA than an RSA private-key
  operation, which is the part of a TLS handshake the webhook pays for on every new connection;
- PEMs are small, so the Secret and the `caBundle` injected into webhook configurations stay small.
Certificates issued by someone else with RSA keys (for example by cert-manager) are still accepted
everywhere a certificate is read.

Validity follows cert-controller: CA ten years, serving certificate one year, both backdated by an hour
to absorb clock skew between the issuer and the API server.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.bundle import (
    CertificateError,
    PrivateKey,
    certificate_pem,
    load_certificates,
    load_private_key,
    private_key_pem,
    public_keys_equal,
)
from shared.naming import is_dns1123_label

CA_VALIDITY: Final = timedelta(days=3650)
SERVING_VALIDITY: Final = timedelta(days=365)
# Certificates start an hour in the past so a verifier whose clock runs slightly behind accepts them.
BACKDATE: Final = timedelta(hours=1)
DEFAULT_CA_COMMON_NAME: Final = "modelbooster-webhook-ca"

# RFC 1123 host names (lower case), optionally with one leading wildcard label.
_DNS_NAME = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_NAME_MAX_LENGTH: Final = 253


@dataclass(frozen=True)
class KeyPair:
    """A certificate with its private key."""

    cert: x509.Certificate
    key: PrivateKey

    @property
    def cert_pem(self) -> bytes:
        return certificate_pem(self.cert)

    @property
    def key_pem(self) -> bytes:
        return private_key_pem(self.key)

    @classmethod
    def from_pem(cls, cert_pem: bytes, key_pem: bytes, *, what: str = "certificate") -> KeyPair:
        """Read a PEM certificate (the first one in the data) and its key; refuse a key of another cert."""
        cert = load_certificates(cert_pem, what=what)[0]
        key = load_private_key(key_pem, what=f"{what} key")
        if not public_keys_equal(cert, key):
            raise CertificateError(f"the {what} key does not belong to the {what}")
        return cls(cert=cert, key=key)


def generate_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if now.tzinfo is None:
        raise CertificateError("`now` must be timezone-aware")
    return now


def create_ca(
    *,
    common_name: str = DEFAULT_CA_COMMON_NAME,
    now: datetime | None = None,
    validity: timedelta = CA_VALIDITY,
) -> KeyPair:
    """A new self-signed CA that may sign end-entity certificates only (path length 0)."""
    start = _now(now)
    if validity <= timedelta(0):
        raise CertificateError(f"CA validity must be positive, got {validity}")
    key = generate_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - BACKDATE)
        .not_valid_after(start + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert=cert, key=key)


def serving_dns_names(*, service: str, namespace: str) -> tuple[str, str]:
    """The names kube-apiserver uses to reach a webhook Service: `<svc>.<ns>.svc` (+ `.cluster.local`)."""
    for what, value in (("service", service), ("namespace", namespace)):
        if not is_dns1123_label(value):
            raise CertificateError(
                f"{what} name {value!r} is not a DNS-1123 label "
                "(lower-case letters, digits and '-', at most 63 characters)"
            )
    return (f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local")


def parse_san(value: str) -> x509.GeneralName:
    """An extra subject alternative name: an IP address, or a DNS name (wildcard allowed)."""
    try:
        return x509.IPAddress(ipaddress.ip_address(value))
    except ValueError:
        pass
    if len(value) > _DNS_NAME_MAX_LENGTH or not _DNS_NAME.match(value):
        raise CertificateError(f"subject alternative name {value!r} is neither an IP address nor a lower-case DNS name")
    return x509.DNSName(value)


def serving_sans(*, service: str, namespace: str, extra_sans: Sequence[str] = ()) -> tuple[str, ...]:
    """Every SAN a serving certificate for this Service carries, in certificate order, without repeats."""
    ordered: dict[str, None] = dict.fromkeys(serving_dns_names(service=service, namespace=namespace))
    for extra in extra_sans:
        parse_san(extra)
        ordered.setdefault(extra, None)
    return tuple(ordered)


def issue_serving_cert(
    *,
    ca: KeyPair,
    service: str,
    namespace: str,
    extra_sans: Sequence[str] = (),
    now: datetime | None = None,
    validity: timedelta = SERVING_VALIDITY,
) -> KeyPair:
    """A TLS server certificate for the webhook Service, signed by `ca`.

    The end date never passes the CA's own, so a verifier never sees a leaf that outlives its issuer.
    """
    start = _now(now)
    if validity <= timedelta(0):
        raise CertificateError(f"serving certificate validity must be positive, got {validity}")
    if start >= ca.cert.not_valid_after_utc:
        raise CertificateError(f"the CA expired at {ca.cert.not_valid_after_utc.isoformat()}")
    sans = serving_sans(service=service, namespace=namespace, extra_sans=extra_sans)
    key = generate_key()
    ca_ski = ca.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, sans[0])]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - BACKDATE)
        .not_valid_after(min(start + validity, ca.cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([parse_san(name) for name in sans]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(cert=cert, key=key)
