"""What the fake serves: one `ResourceInfo` per group/resource, with per-kind behaviour in a `Strategy`.

A strategy plays the part of a kube-apiserver registry strategy (PrepareForCreate, PrepareForUpdate,
Validate, ...). Custom resources share `CustomResourceStrategy`; built-in kinds live in `builtin.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tests.fakeapi.errors import FieldError, GroupKind, GroupResource
from tests.fakeapi.typed import Field

Obj = dict[str, Any]

META_FIELD_LABELS = frozenset({"metadata.name", "metadata.namespace"})


class Strategy:
    """Per-kind hooks. Objects passed in are private copies the hook may change in place."""

    tracks_generation: ClassVar[bool] = False
    allow_unconditional_update: ClassVar[bool] = True
    allow_create_on_update: ClassVar[bool] = False
    return_deleted_object: ClassVar[bool] = False
    # Field selectors the kind supports besides metadata.name/metadata.namespace.
    field_labels: ClassVar[frozenset[str]] = frozenset()
    # Top-level fields the Go type has; others are dropped on decode (None: keep everything).
    top_level_fields: ClassVar[frozenset[str] | None] = None
    # Name validation: "subdomain" (most kinds), "label" (namespaces), "path" (events: any path segment).
    name_rule: ClassVar[str] = "subdomain"
    # Fields the Go decoder type-checks (dotted path -> Go type), refused with a 400 before anything else.
    typed_fields: ClassVar[Mapping[str, Field]] = {}

    def default(self, obj: Obj) -> None:
        """What the kind's defaulting functions set while the request is decoded (before managed fields are
        recorded, so the writer owns it)."""

    def prepare_for_create(self, obj: Obj) -> None:
        """Reset what a create may not set (status of kinds with a status subresource, ...)."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Reset what an update through the main endpoint may not change."""

    def prepare_status_update(self, new: Obj, old: Obj) -> None:
        """Keep only status changes for a write to /status (default: copy everything but status from old)."""
        status = new.get("status")
        managed = new.get("metadata", {}).get("managedFields")
        new.clear()
        new.update(_copy(old))
        if managed is not None:
            new["metadata"]["managedFields"] = managed
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        return []

    def field_value(self, obj: Obj, label: str) -> str | None:
        """Value of a supported field label on an object (None when the label is not supported)."""
        if label == "metadata.name":
            return str(obj.get("metadata", {}).get("name", ""))
        if label == "metadata.namespace":
            return str(obj.get("metadata", {}).get("namespace", ""))
        if label in self.field_labels:
            value: Any = obj
            for part in label.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                return ""
            if isinstance(value, bool):
                return "true" if value else "false"
            return str(value)
        return None

    def to_storage(self, obj: Obj, version: str) -> Obj:
        """Convert an object as the client sent it (at `version`) to the stored form."""
        return obj

    def from_storage(self, obj: Obj, version: str) -> Obj:
        """Convert a stored object to the form served at `version`."""
        return obj


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@dataclass
class VersionInfo:
    """One served version of a resource."""

    name: str
    schema: Obj | None = None  # openAPIV3Schema of a CRD version
    status_subresource: bool = False
    printer_columns: list[Obj] = field(default_factory=list)
    storage: bool = True
    scale: Obj | None = None  # a CRD version's `subresources.scale` (specReplicasPath, ...)


@dataclass
class ResourceInfo:
    group: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    versions: dict[str, VersionInfo]
    strategy: Strategy
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    custom: bool = False
    # Where objects are kept: events.k8s.io/v1 events share core v1 events' storage.
    storage_group: str | None = None
    # Minimal OpenAPI-shaped schema of a built-in kind, for server-side apply merge rules.
    type_schema: Obj | None = None
    # The CRD that registered this resource (uid), for cleanup when the CRD goes away.
    crd_uid: str = ""
    # Its CRD is being deleted: still served for reading and deleting, no longer for creating.
    terminating: bool = False

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def storage_key(self) -> str:
        group = self.group if self.storage_group is None else self.storage_group
        return f"{self.plural}.{group}" if group else self.plural

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(self.group, self.plural)

    @property
    def group_kind(self) -> GroupKind:
        """The kind named in Invalid errors: the stored type's, so events.k8s.io events say `Event`."""
        return GroupKind(self.group if self.storage_group is None else self.storage_group, self.kind)

    @property
    def storage_version(self) -> str:
        for info in self.versions.values():
            if info.storage:
                return info.name
        return next(iter(self.versions))

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def has_status(self, version: str) -> bool:
        return self.versions[version].status_subresource

    def scale(self, version: str) -> Obj | None:
        return self.versions[version].scale

    def schema(self, version: str) -> Obj | None:
        return self.versions[version].schema


def api_version_of(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


class CustomResourceStrategy(Strategy):
    """The strategy of every custom resource (apiextensions-apiserver's customResourceStrategy)."""

    tracks_generation = True
    allow_unconditional_update = False
    return_deleted_object = False

    def __init__(self, *, status_versions: frozenset[str]) -> None:
        self.status_versions = status_versions

    def prepare_for_create(self, obj: Obj) -> None:
        version = str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
        if version in self.status_versions:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        version = str(new.get("apiVersion", "")).rsplit("/", 1)[-1]
        if version in self.status_versions:
            if "status" in old:
                new["status"] = _copy(old["status"])
            else:
                new.pop("status", None)
