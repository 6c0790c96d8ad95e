"""Discovery documents (`/api`, `/apis`, `/apis/<group>[/<version>]`, `/version`) for what is served.

Resources of a CRD appear as kube-apiserver's discovery controller lists them (apiextensions-apiserver): each
served version of the CRD, with its verbs in that controller's order, fewer verbs (no create, update, patch)
while the CRD is being deleted, a `<plural>/status` entry for a status subresource and a `<plural>/scale` entry
(`autoscaling/v1` Scale) for a scale subresource, and a `storageVersionHash`. They disappear with the CRD.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, Final

from tests.fakeapi.resources import ResourceInfo

Obj = dict[str, Any]

VERBS: Final = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
CUSTOM_VERBS: Final = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
TERMINATING_VERBS: Final = ["delete", "deletecollection", "get", "list", "watch"]
SUBRESOURCE_VERBS: Final = ["get", "patch", "update"]
SERVER_VERSION: Final[Obj] = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-fakeapi",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_VERSION_RE: Final = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kube-aware version order: GA before beta before alpha, higher numbers first, others last."""
    match = _VERSION_RE.match(version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, version)


def _group_versions(resources: list[ResourceInfo]) -> dict[str, list[str]]:
    groups: dict[str, set[str]] = {}
    for res in resources:
        groups.setdefault(res.group, set()).update(res.versions)
    return {g: sorted(v, key=version_priority) for g, v in groups.items()}


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(resources: list[ResourceInfo]) -> Obj:
    groups = _group_versions(resources)
    builtin_order = [r.group for r in resources if not r.custom]
    names = [g for g in dict.fromkeys(builtin_order) if g] + sorted(g for g in groups if g and g not in builtin_order)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_entry(g, groups[g]) for g in names]}


def api_group(resources: list[ResourceInfo], group: str) -> Obj | None:
    versions = _group_versions(resources).get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """kube-apiserver's hash of the storage version: the first 8 bytes of sha256("group/version/kind"), base64."""
    return base64.b64encode(hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()[:8]).decode()


def _verbs(res: ResourceInfo) -> list[str]:
    if not res.custom:
        return VERBS
    return TERMINATING_VERBS if res.terminating else CUSTOM_VERBS


def api_resource_list(resources: list[ResourceInfo], group: str, version: str) -> Obj | None:
    chosen = [r for r in resources if r.group == group and version in r.versions]
    if not chosen:
        return None
    entries: list[Obj] = []
    for res in sorted(chosen, key=lambda r: r.plural):
        entry: Obj = {
            "name": res.plural,
            "singularName": res.singular,
            "namespaced": res.namespaced,
            "kind": res.kind,
            "verbs": _verbs(res),
        }
        if res.short_names:
            entry["shortNames"] = res.short_names
        if res.categories:
            entry["categories"] = res.categories
        if res.custom:
            entry["storageVersionHash"] = storage_version_hash(res.group, res.storage_version, res.kind)
        entries.append(entry)
        if res.has_status(version):
            entries.append(
                {
                    "name": f"{res.plural}/status",
                    "singularName": "",
                    "namespaced": res.namespaced,
                    "kind": res.kind,
                    "verbs": SUBRESOURCE_VERBS,
                }
            )
        if res.scale(version) is not None:
            entries.append(
                {
                    "name": f"{res.plural}/scale",
                    "singularName": "",
                    "namespaced": res.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": SUBRESOURCE_VERBS,
                }
            )
    entries.sort(key=lambda entry: str(entry["name"]))  # as kube-apiserver's discovery controller sorts them
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries}
