"""PEM encoding and decoding, and the CA + serving-certificate bundle the webhook is given.

`ca.crt` may hold more than one CA certificate: during a CA rotation it carries the old and the new one,
so a serving certificate signed by either verifies (certs/rotation.py decides when).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

# One PEM block: its label and everything up to the matching END line.
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----", re.DOTALL)


class CertificateError(ValueError):
    """Certificate material cannot be made or read as asked; the message names the offending input."""


def load_certificates(pem: bytes, *, what: str) -> list[x509.Certificate]:
    """Every certificate in a PEM blob, in order; at least one, or a CertificateError naming `what`."""
    if not pem.strip():
        raise CertificateError(f"{what} is empty")
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError as error:
        raise CertificateError(f"{what} is not PEM-encoded X.509 certificates: {error}") from None
    return certs


def read_certificates_leniently(pem: bytes, *, what: str) -> tuple[list[x509.Certificate], list[str]]:
    """The certificates of the PEM blocks that parse, and one complaint per block (or blob) that does not.

    For data someone else may have written (an injected caBundle): one bad block must not hide the good ones,
    and nothing here raises.
    """
    certs: list[x509.Certificate] = []
    problems: list[str] = []
    blocks = list(_PEM_BLOCK.finditer(pem))
    if not blocks:
        problems.append(f"{what} holds no PEM block")
    for number, block in enumerate(blocks, start=1):
        label = block.group(1).decode("ascii")
        if label != "CERTIFICATE":
            problems.append(f"{what}: PEM block {number} is a {label}, not a CERTIFICATE")
            continue
        try:
            certs.append(x509.load_pem_x509_certificate(block.group(0)))
        except ValueError as error:
            problems.append(f"{what}: PEM block {number} is not an X.509 certificate: {error}")
    return certs, problems


def load_private_key(pem: bytes, *, what: str) -> PrivateKey:
    """An unencrypted PEM private key (PKCS#8, SEC1 or PKCS#1), ECDSA or RSA."""
    if not pem.strip():
        raise CertificateError(f"{what} is empty")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise CertificateError(f"{what} is not an unencrypted PEM private key: {error}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise CertificateError(f"{what} is a {type(key).__name__}; only ECDSA and RSA keys are supported")
    return key


def certificate_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def certificates_pem(certs: Sequence[x509.Certificate]) -> bytes:
    return b"".join(certificate_pem(cert) for cert in certs)


def private_key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def is_ca(cert: x509.Certificate) -> bool:
    """True when the certificate may sign others (basicConstraints CA:TRUE)."""
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except (x509.ExtensionNotFound, x509.DuplicateExtension, ValueError):  # ValueError: unparseable extensions
        return False


def public_keys_equal(cert: x509.Certificate, key: PrivateKey) -> bool:
    return cert.public_key() == key.public_key()


def is_issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """True when `issuer` signed `cert` (issuer name matches and the signature verifies)."""
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def san_strings(cert: x509.Certificate) -> frozenset[str]:
    """The DNS names and IP addresses a certificate is valid for, as plain strings."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return frozenset()
    names = set(sans.get_values_for_type(x509.DNSName))
    names.update(str(address) for address in sans.get_values_for_type(x509.IPAddress))
    return frozenset(names)


def fingerprint(cert: x509.Certificate) -> str:
    """SHA-256 fingerprint in lower-case hex: a stable identity for de-duplicating CA lists."""
    return cert.fingerprint(hashes.SHA256()).hex()


def describe_certificate(cert: x509.Certificate) -> str:
    """Subject, fingerprint and expiry: enough to tell certificates apart in a log line."""
    return (
        f"{cert.subject.rfc4514_string() or '(no subject)'} sha256:{fingerprint(cert)[:16]} "
        f"until {cert.not_valid_after_utc.isoformat()}"
    )


@dataclass(frozen=True)
class CertBundle:
    """`ca.crt`, `tls.crt` and `tls.key` as PEM bytes, the way a mounted Secret holds them."""

    ca_crt: bytes
    tls_crt: bytes
    tls_key: bytes

    @cached_property
    def cas(self) -> list[x509.Certificate]:
        return load_certificates(self.ca_crt, what="ca.crt")

    @cached_property
    def serving_chain(self) -> list[x509.Certificate]:
        return load_certificates(self.tls_crt, what="tls.crt")

    @property
    def serving_cert(self) -> x509.Certificate:
        return self.serving_chain[0]

    @cached_property
    def serving_key(self) -> PrivateKey:
        return load_private_key(self.tls_key, what="tls.key")

    @property
    def serving_not_after(self) -> datetime:
        return self.serving_cert.not_valid_after_utc

    @property
    def ca_not_after(self) -> datetime:
        """When the longest-lived CA in `ca.crt` expires."""
        return max(ca.not_valid_after_utc for ca in self.cas)

    def serving_expires_in(self, *, now: datetime) -> timedelta:
        """Time left on the serving certificate (negative once expired)."""
        return self.serving_not_after - now

    def ca_bundle_base64(self) -> str:
        """`ca.crt` as the base64 string a webhook configuration's `clientConfig.caBundle` holds."""
        return base64.b64encode(self.ca_crt).decode("ascii")

    def problems(self, *, now: datetime, sans: Sequence[str] = ()) -> list[str]:
        """Why this bundle would not serve, one sentence each; empty when it is usable.

        Checks what kube-apiserver will check on the handshake (a trusted issuer, the validity window,
        the names it dials) plus what the TLS server needs (the key matching the certificate).
        """
        try:
            cas, cert, key = self.cas, self.serving_cert, self.serving_key
        except CertificateError as error:
            return [str(error)]
        found: list[str] = []
        if not public_keys_equal(cert, key):
            found.append("tls.key does not belong to the certificate in tls.crt")
        if not any(is_issued_by(cert, ca) for ca in cas):
            found.append("tls.crt is not signed by any CA in ca.crt")
        if now < cert.not_valid_before_utc:
            found.append(f"tls.crt is not valid before {cert.not_valid_before_utc.isoformat()}")
        if now >= cert.not_valid_after_utc:
            found.append(f"tls.crt expired at {cert.not_valid_after_utc.isoformat()}")
        missing = sorted(set(sans) - san_strings(cert))
        if missing:
            found.append(f"tls.crt is not valid for {', '.join(missing)}")
        return found
