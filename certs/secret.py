"""The Secrets that hold the webhook's TLS material, as plain manifests (no API calls here).

Serving Secret, mounted by the webhook pods: type `kubernetes.io/tls` with `tls.crt`, `tls.key` and
`ca.crt` (the layout cert-manager writes, so either can provide it).
CA Secret, read only by the reconciler: type `Opaque` with `ca.crt` and `ca.key`. It is a separate object
so the webhook pods, which mount the serving Secret, never hold the key that could sign for them.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from certs.authority import KeyPair
from certs.bundle import CertBundle, CertificateError, is_ca, public_keys_equal

TLS_CRT: Final = "tls.crt"
TLS_KEY: Final = "tls.key"
CA_CRT: Final = "ca.crt"
CA_KEY: Final = "ca.key"
SERVING_SECRET_TYPE: Final = "kubernetes.io/tls"
CA_SECRET_TYPE: Final = "Opaque"


class SecretFormatError(ValueError):
    """A Secret does not have the expected layout; the message names the Secret and the key."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _manifest(
    *,
    name: str,
    namespace: str,
    secret_type: str,
    data: Mapping[str, bytes],
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": secret_type,
        "data": {key: _b64(value) for key, value in data.items()},
    }


def build_serving_secret(
    *,
    name: str,
    namespace: str,
    bundle: CertBundle,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return _manifest(
        name=name,
        namespace=namespace,
        secret_type=SERVING_SECRET_TYPE,
        data={TLS_CRT: bundle.tls_crt, TLS_KEY: bundle.tls_key, CA_CRT: bundle.ca_crt},
        labels=labels,
        annotations=annotations,
    )


def build_ca_secret(
    *,
    name: str,
    namespace: str,
    ca: KeyPair,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return _manifest(
        name=name,
        namespace=namespace,
        secret_type=CA_SECRET_TYPE,
        data={CA_CRT: ca.cert_pem, CA_KEY: ca.key_pem},
        labels=labels,
        annotations=annotations,
    )


def _describe(secret: Mapping[str, Any]) -> str:
    metadata = secret.get("metadata")
    if isinstance(metadata, Mapping):
        return f"Secret {metadata.get('namespace', '?')}/{metadata.get('name', '?')}"
    return "Secret"


def _decoded(secret: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, bytes]:
    """The named entries of `data` (base64) or `stringData` (plain), decoded."""
    where = _describe(secret)
    if secret.get("kind", "Secret") != "Secret":
        raise SecretFormatError(f"{where}: expected kind Secret, got {secret.get('kind')!r}")
    data = secret.get("data") or {}
    string_data = secret.get("stringData") or {}
    if not isinstance(data, Mapping) or not isinstance(string_data, Mapping):
        raise SecretFormatError(f"{where}: data and stringData must be maps")
    out: dict[str, bytes] = {}
    for key in keys:
        if key in string_data and isinstance(string_data[key], str):
            out[key] = string_data[key].encode("utf-8")
            continue
        raw = data.get(key)
        if not isinstance(raw, str) or not raw:
            raise SecretFormatError(f"{where} has no {key!r}")
        try:
            out[key] = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise SecretFormatError(f"{where}: {key!r} is not valid base64") from None
    return out


def parse_serving_secret(secret: Mapping[str, Any]) -> CertBundle:
    """The bundle in a serving Secret; every PEM is parsed so a broken Secret fails here, by name, as does a
    key that is not the certificate's."""
    data = _decoded(secret, (TLS_CRT, TLS_KEY, CA_CRT))
    bundle = CertBundle(ca_crt=data[CA_CRT], tls_crt=data[TLS_CRT], tls_key=data[TLS_KEY])
    try:
        _ = bundle.cas, bundle.serving_chain, bundle.serving_key
    except CertificateError as error:
        raise SecretFormatError(f"{_describe(secret)}: {error}") from None
    if not public_keys_equal(bundle.serving_cert, bundle.serving_key):
        raise SecretFormatError(f"{_describe(secret)}: tls.key does not belong to the certificate in tls.crt")
    return bundle


def parse_ca_secret(secret: Mapping[str, Any]) -> KeyPair:
    """The CA in a CA Secret; SecretFormatError also when its certificate is not a CA's."""
    data = _decoded(secret, (CA_CRT, CA_KEY))
    try:
        ca = KeyPair.from_pem(data[CA_CRT], data[CA_KEY], what="ca.crt")
    except CertificateError as error:
        raise SecretFormatError(f"{_describe(secret)}: {error}") from None
    if not is_ca(ca.cert):
        raise SecretFormatError(
            f"{_describe(secret)}: ca.crt is not a CA certificate (basicConstraints CA:TRUE missing)"
        )
    return ca


def serving_expiry(secret: Mapping[str, Any] | None) -> datetime | None:
    """When the serving certificate in `secret` expires; None when there is no such Secret or it is unusable."""
    try:
        return parse_serving_secret(secret).serving_not_after if secret is not None else None
    except SecretFormatError:
        return None


def ca_expiry(secret: Mapping[str, Any] | None) -> datetime | None:
    """When the CA in `secret` expires; None when there is no such Secret or it is unusable."""
    try:
        return parse_ca_secret(secret).cert.not_valid_after_utc if secret is not None else None
    except SecretFormatError:
        return None


def merged_secret(
    existing: Mapping[str, Any], desired: Mapping[str, Any], *, labels: Mapping[str, str]
) -> dict[str, Any]:
    """`existing` with the keys of `desired` and `labels` set: other keys, labels, annotations and the
    resourceVersion are kept (an update stays conditional on what was read)."""
    updated = copy.deepcopy(dict(existing))
    updated["data"] = {**(existing.get("data") or {}), **desired["data"]}
    updated.pop("stringData", None)  # write-only; never returned, but a merged copy must not resend it
    meta = updated.setdefault("metadata", {})
    meta["labels"] = {**labels, **(meta.get("labels") or {})}
    return updated
