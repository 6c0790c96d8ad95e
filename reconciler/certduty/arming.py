"""When the webhook configurations start to be enforced: "armed" by the duty, not at `helm install`.

The chart renders both configurations without `webhooks` and with the entries it wants in the annotation
`modelbooster.io/webhooks` (a JSON list). A configuration with no entries is enforced for nothing, so until the
duty writes them ModelBoosters are checked by the CRD's schema and CEL rules alone, exactly as when the chart
is not installed. The duty writes the entries, each with the caBundle, once the webhook Service has had a
ready endpoint for the arm delay (the time kube-proxy takes to route a new endpoint): from the first enforced
request on, a pod that serves a certificate the bundle trusts answers it. Written once, the entries stay —
also when every webhook pod is gone later, since failing closed is what `failurePolicy: Fail` asks for —
and follow the annotation (a `helm upgrade` changing a value) and the caBundle.

Helm never renders `webhooks`, so its three-way merge and server-side apply leave the entries alone, as they
leave the injected caBundle. A configuration without the annotation (cert-manager mode, or a chart before this
scheme) keeps its rendered entries and only gets its caBundle injected. docs/design/webhook.md §7 says why.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

ENTRIES_ANNOTATION: Final = "modelbooster.io/webhooks"
# Two entries of about 1 KiB are what the chart renders; anything far beyond is not ours.
MAX_ANNOTATION_BYTES: Final = 64 * 1024
MAX_ENTRIES: Final = 16


class ArmingError(Exception):
    """The annotation cannot be read as webhook entries; the message names the configuration and why."""


def _describe(configuration: Mapping[str, Any]) -> str:
    metadata = configuration.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f"{configuration.get('kind') or 'webhook configuration'} {name or '(unnamed)'}"


def wanted_entries(configuration: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The entries the annotation asks for, or None when the configuration has no such annotation."""
    metadata = configuration.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    text = annotations.get(ENTRIES_ANNOTATION) if isinstance(annotations, Mapping) else None
    if text is None:
        return None
    where = f"{_describe(configuration)}: annotation {ENTRIES_ANNOTATION}"
    if not isinstance(text, str) or len(text.encode()) > MAX_ANNOTATION_BYTES:
        raise ArmingError(f"{where} is not a string of at most {MAX_ANNOTATION_BYTES} bytes")
    try:
        entries = json.loads(text)
    except ValueError as error:
        raise ArmingError(f"{where} is not JSON ({error})") from None
    if not isinstance(entries, list) or not 0 < len(entries) <= MAX_ENTRIES:
        raise ArmingError(f"{where} must be a list of 1 to {MAX_ENTRIES} webhook entries")
    names = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ArmingError(f"{where}: entry {index} is not an object with a name")
        names.append(entry["name"])
    if len(set(names)) != len(names):
        raise ArmingError(f"{where}: entry names repeat ({', '.join(names)})")
    return entries


def live_entries(configuration: Mapping[str, Any]) -> list[Any]:
    webhooks = configuration.get("webhooks")
    return webhooks if isinstance(webhooks, list) else []


def _covers(live: Any, wanted: Any) -> bool:
    """`live` says everything `wanted` says; what the API server added (its defaults) is allowed."""
    if isinstance(wanted, Mapping):
        return isinstance(live, Mapping) and all(_covers(live.get(key), value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(_covers(item, want) for item, want in zip(live, wanted, strict=True))
        )
    # JSON equality: `true` is not `1`.
    return type(live) is type(wanted) and live == wanted


def _without_ca_bundle(entry: Mapping[str, Any]) -> dict[str, Any]:
    client = entry.get("clientConfig")
    if not isinstance(client, Mapping):
        return dict(entry)
    return {**entry, "clientConfig": {key: value for key, value in client.items() if key != "caBundle"}}


def entries_match(live: Iterable[Any], wanted: list[dict[str, Any]], ca_bundle: str) -> bool:
    """The live entries are the wanted ones (in any order, server defaults allowed), each with `ca_bundle`."""
    by_name = {entry.get("name"): entry for entry in live if isinstance(entry, Mapping)}
    if set(by_name) != {entry["name"] for entry in wanted}:
        return False
    for want in wanted:
        entry = by_name[want["name"]]
        client = entry.get("clientConfig")
        if not isinstance(client, Mapping) or client.get("caBundle") != ca_bundle:
            return False
        if not _covers(entry, _without_ca_bundle(want)):
            return False
    return True


def armed_copy(configuration: Mapping[str, Any], wanted: list[dict[str, Any]], ca_bundle: str) -> dict[str, Any]:
    """A copy of `configuration` (its resourceVersion kept, for an optimistic update) carrying the wanted
    entries, each with `ca_bundle`."""
    updated = copy.deepcopy(dict(configuration))
    entries = copy.deepcopy(wanted)
    for entry in entries:
        client = entry.get("clientConfig")
        if not isinstance(client, dict):
            client = entry["clientConfig"] = {}
        client["caBundle"] = ca_bundle
    updated["webhooks"] = entries
    return updated


def ready_endpoints(slices: Iterable[Mapping[str, Any]]) -> int:
    """Endpoints of these EndpointSlices that are ready (an absent `ready` means ready, as the API says)."""
    count = 0
    for piece in slices:
        endpoints = piece.get("endpoints")
        for endpoint in endpoints if isinstance(endpoints, list) else []:
            conditions = endpoint.get("conditions") if isinstance(endpoint, Mapping) else None
            ready = conditions.get("ready") if isinstance(conditions, Mapping) else None
            if ready is None or ready is True:
                count += 1
    return count
