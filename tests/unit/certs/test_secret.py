"""Secret manifests have the layout the webhook mounts; parsing names the Secret and key at fault."""

from __future__ import annotations

import base64
import re
from datetime import datetime
from typing import Any

import pytest

from certs.authority import KeyPair, issue_serving_cert
from certs.bundle import CertBundle
from certs.secret import (
    SecretFormatError,
    build_ca_secret,
    build_serving_secret,
    parse_ca_secret,
    parse_serving_secret,
)


@pytest.fixture
def bundle(ca: KeyPair, now: datetime) -> CertBundle:
    serving = issue_serving_cert(ca=ca, service="svc", namespace="ns", now=now)
    return CertBundle(ca_crt=ca.cert_pem, tls_crt=serving.cert_pem, tls_key=serving.key_pem)


def test_serving_secret_layout(bundle: CertBundle) -> None:
    secret = build_serving_secret(name="mb-webhook-certs", namespace="kthena", bundle=bundle, labels={"a": "b"})
    assert secret["apiVersion"] == "v1"
    assert secret["kind"] == "Secret"
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"] == {"name": "mb-webhook-certs", "namespace": "kthena", "labels": {"a": "b"}}
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert base64.b64decode(secret["data"]["tls.crt"]) == bundle.tls_crt
    assert base64.b64decode(secret["data"]["tls.key"]) == bundle.tls_key
    assert base64.b64decode(secret["data"]["ca.crt"]) == bundle.ca_crt


def test_serving_secret_round_trip(bundle: CertBundle) -> None:
    secret = build_serving_secret(name="s", namespace="n", bundle=bundle)
    assert parse_serving_secret(secret) == bundle


def test_ca_secret_is_opaque_and_round_trips(ca: KeyPair) -> None:
    secret = build_ca_secret(name="mb-ca", namespace="kthena", ca=ca)
    assert secret["type"] == "Opaque"
    assert sorted(secret["data"]) == ["ca.crt", "ca.key"]
    assert parse_ca_secret(secret).cert == ca.cert


def test_string_data_is_read_like_the_api_server_would_merge_it(bundle: CertBundle) -> None:
    secret: dict[str, Any] = {
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "n"},
        "stringData": {"tls.crt": bundle.tls_crt.decode(), "tls.key": bundle.tls_key.decode()},
        "data": {"ca.crt": base64.b64encode(bundle.ca_crt).decode()},
    }
    assert parse_serving_secret(secret) == bundle


def _with(bundle: CertBundle, **data: str | None) -> dict[str, Any]:
    secret = build_serving_secret(name="s", namespace="n", bundle=bundle)
    for key, value in data.items():
        name = key.replace("_", ".")
        if value is None:
            del secret["data"][name]
        else:
            secret["data"][name] = value
    return secret


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tls_key": None}, "Secret n/s has no 'tls.key'"),
        ({"ca_crt": ""}, "Secret n/s has no 'ca.crt'"),
        ({"tls_crt": "not base64!"}, "Secret n/s: 'tls.crt' is not valid base64"),
        ({"tls_crt": base64.b64encode(b"hello").decode()}, "Secret n/s: tls.crt is not PEM-encoded"),
        ({"tls_key": base64.b64encode(b"hello").decode()}, "Secret n/s: tls.key is not an unencrypted PEM"),
    ],
)
def test_broken_serving_secret_is_named(bundle: CertBundle, change: dict[str, str | None], message: str) -> None:
    with pytest.raises(SecretFormatError, match=re.escape(message)):
        parse_serving_secret(_with(bundle, **change))


def test_wrong_kind_and_shape_are_refused(bundle: CertBundle) -> None:
    with pytest.raises(SecretFormatError, match=re.escape("expected kind Secret, got 'ConfigMap'")):
        parse_serving_secret({"kind": "ConfigMap", "metadata": {"name": "s", "namespace": "n"}})
    with pytest.raises(SecretFormatError, match="data and stringData must be maps"):
        parse_serving_secret({"kind": "Secret", "data": ["x"]})


def test_ca_secret_with_foreign_key_is_refused(ca: KeyPair, bundle: CertBundle) -> None:
    secret = build_ca_secret(name="mb-ca", namespace="kthena", ca=ca)
    secret["data"]["ca.key"] = base64.b64encode(bundle.tls_key).decode()
    with pytest.raises(SecretFormatError, match=re.escape("Secret kthena/mb-ca: the ca.crt key does not belong")):
        parse_ca_secret(secret)
