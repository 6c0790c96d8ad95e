"""`caBundle` in Mutating/ValidatingWebhookConfigurations: what drifted and the corrected object (no I/O).

kube-apiserver verifies a webhook's serving certificate against `webhooks[].clientConfig.caBundle`, a base64
string of PEM CA certificates. Every entry of our configurations must carry the bundle of the serving Secret
(`ca.crt`); an entry without it, or with another value (a `helm upgrade` that rendered it empty, a person
pasting an old CA), makes admission calls fail TLS verification. The reconciler reads the configurations,
asks `inject_ca_bundle` for a corrected copy and writes it back with the resourceVersion it read, so a
concurrent edit is never overwritten blindly.

`injected_cas` reads what the API server trusts right now, for the one case where our own Secrets no longer
say (certs/rotation.py decides when it is used). The caBundle may have been written by anyone, so it is read
leniently: every certificate that parses is returned, everything else is reported, nothing raises.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Mapping
from typing import Any

from cryptography import x509

from certs.bundle import read_certificates_leniently


class InjectionError(ValueError):
    """A webhook configuration cannot carry a caBundle as it is; the message names the entry."""


def _webhooks(configuration: Mapping[str, Any]) -> list[Any]:
    webhooks = configuration.get("webhooks")
    if webhooks is None:
        return []
    if not isinstance(webhooks, list):
        raise InjectionError(f"{_describe(configuration)}: webhooks must be a list")
    return webhooks


def _describe(configuration: Mapping[str, Any]) -> str:
    metadata = configuration.get("metadata")
    name = metadata.get("name", "?") if isinstance(metadata, Mapping) else "?"
    return f"{configuration.get('kind', 'webhook configuration')} {name}"


def injected_cas(configuration: Mapping[str, Any]) -> tuple[list[x509.Certificate], list[str]]:
    """Every certificate in the `caBundle` of every entry (in order, duplicates included), and what could not
    be read, one sentence per problem naming the entry. Entries without a caBundle contribute nothing."""
    certs: list[x509.Certificate] = []
    problems: list[str] = []
    webhooks = configuration.get("webhooks")
    for index, webhook in enumerate(webhooks if isinstance(webhooks, list) else []):
        client = webhook.get("clientConfig") if isinstance(webhook, Mapping) else None
        value = client.get("caBundle") if isinstance(client, Mapping) else None
        if value is None or value == "":
            continue
        entry = f"{_describe(configuration)} webhooks[{index}] caBundle"
        if not isinstance(value, str):
            problems.append(f"{entry} is not a string")
            continue
        try:
            pem = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            problems.append(f"{entry} is not valid base64")
            continue
        found, unreadable = read_certificates_leniently(pem, what=entry)
        certs += found
        problems += unreadable
    return certs, problems


def drifted_webhooks(configuration: Mapping[str, Any], ca_bundle: str) -> list[str]:
    """Names of the entries whose `clientConfig.caBundle` is not exactly `ca_bundle`, in order."""
    drifted: list[str] = []
    for index, webhook in enumerate(_webhooks(configuration)):
        if not isinstance(webhook, Mapping):
            raise InjectionError(f"{_describe(configuration)}: webhooks[{index}] is not an object")
        client = webhook.get("clientConfig")
        if client is not None and not isinstance(client, Mapping):
            raise InjectionError(f"{_describe(configuration)}: webhooks[{index}].clientConfig is not an object")
        if (client or {}).get("caBundle") != ca_bundle:
            drifted.append(str(webhook.get("name") or f"webhooks[{index}]"))
    return drifted


def inject_ca_bundle(configuration: Mapping[str, Any], ca_bundle: str) -> dict[str, Any] | None:
    """A copy of `configuration` with `ca_bundle` in every entry, or None when every entry already has it.

    Everything else, `metadata.resourceVersion` included, is kept, so writing the copy back with PUT is an
    optimistic-concurrency update that fails (409) if someone changed the object after it was read.
    """
    if not drifted_webhooks(configuration, ca_bundle):
        return None
    updated = copy.deepcopy(dict(configuration))
    for webhook in updated["webhooks"]:
        client = webhook.get("clientConfig")
        if client is None:
            client = webhook["clientConfig"] = {}
        client["caBundle"] = ca_bundle
    return updated
