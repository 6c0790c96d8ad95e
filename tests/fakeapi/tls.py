"""Throw-away TLS material for tests: a CA and a serving certificate for given DNS names / IPs."""

from __future__ import annotations

import datetime as dt
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from certs.authority import create_ca, issue_serving_cert


@dataclass(frozen=True)
class TestCertificates:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """An SSLContext serving this certificate (files are written to a temp dir and read back)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as folder:
            cert = Path(folder, "tls.crt")
            key = Path(folder, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context


def make_certificates(hosts: list[str], *, days: int = 1) -> TestCertificates:
    """A fresh CA and a server certificate valid for `hosts` (DNS names or IP addresses).

    Issued by the product's own certificate code (certs/authority.py), so the fake serves what the
    webhook would; the Service names it adds beside `hosts` are harmless here.
    """
    validity = dt.timedelta(days=days)
    ca = create_ca(common_name="fakeapi test CA", validity=validity)
    serving = issue_serving_cert(ca=ca, service="fakeapi", namespace="test", extra_sans=hosts, validity=validity)
    return TestCertificates(ca_pem=ca.cert_pem, cert_pem=serving.cert_pem, key_pem=serving.key_pem)
