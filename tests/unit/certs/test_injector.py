"""Reading the caBundle the webhook configurations carry now: whatever anyone wrote there, nothing raises, every
certificate that parses is returned and everything else is named by configuration and entry."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from certs.authority import KeyPair, create_ca
from certs.injector import injected_cas


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _configuration(*webhooks: Any) -> dict[str, Any]:
    return {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "mb"}, "webhooks": list(webhooks)}


def test_every_entry_contributes_its_certificates_in_order(ca: KeyPair, now: datetime) -> None:
    other = create_ca(now=now, common_name="other")
    configuration = _configuration(
        {"name": "a", "clientConfig": {"caBundle": _b64(ca.cert_pem + other.cert_pem)}},
        {"name": "b", "clientConfig": {"caBundle": _b64(ca.cert_pem)}},
    )
    assert injected_cas(configuration) == ([ca.cert, other.cert, ca.cert], [])


def test_entries_without_a_ca_bundle_contribute_nothing(ca: KeyPair) -> None:
    configuration = _configuration(
        {"name": "a"},
        {"name": "b", "clientConfig": {"service": {"name": "svc"}}},
        {"name": "c", "clientConfig": {"caBundle": ""}},
        {"name": "d", "clientConfig": {"caBundle": _b64(ca.cert_pem)}},
    )
    assert injected_cas(configuration) == ([ca.cert], [])


def test_garbage_is_named_and_the_good_part_kept(ca: KeyPair) -> None:
    configuration = _configuration(
        {"name": "a", "clientConfig": {"caBundle": "this is not base64!"}},
        {"name": "b", "clientConfig": {"caBundle": _b64(b"hello")}},
        {"name": "c", "clientConfig": {"caBundle": 42}},
        {"name": "d", "clientConfig": {"caBundle": _b64(ca.key_pem + ca.cert_pem)}},
    )
    certs, problems = injected_cas(configuration)
    assert certs == [ca.cert]
    assert problems == [
        "ValidatingWebhookConfiguration mb webhooks[0] caBundle is not valid base64",
        "ValidatingWebhookConfiguration mb webhooks[1] caBundle holds no PEM block",
        "ValidatingWebhookConfiguration mb webhooks[2] caBundle is not a string",
        "ValidatingWebhookConfiguration mb webhooks[3] caBundle: PEM block 1 is a PRIVATE KEY, not a CERTIFICATE",
    ]


def test_a_malformed_configuration_reads_as_empty() -> None:
    # The injection step refuses these with a named error; reading what is trusted must not raise first.
    for configuration in (
        {"kind": "MutatingWebhookConfiguration", "webhooks": {"a": 1}},
        _configuration("text", {"name": "x", "clientConfig": ["list"]}),
        {"kind": "MutatingWebhookConfiguration"},
    ):
        assert injected_cas(configuration) == ([], [])
