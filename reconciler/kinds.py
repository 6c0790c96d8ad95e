"""Resource kinds the controllers read and write, and the REST paths that address them.

A `Kind` is everything the generic machinery (client, informers, controllers) needs to know about a resource:
group, version, kind and plural. Nothing here is specific to ModelBooster except the constants at the
bottom, so the Inferno controller registers its own kinds the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from shared import constants as c


@dataclass(frozen=True)
class Kind:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def _prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """The list/watch/create path; `namespace=None` addresses all namespaces."""
        if self.namespaced and namespace:
            return f"{self._prefix()}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{self._prefix()}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        path = f"{self.collection_path(namespace)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path

    def matches(self, obj: dict[str, Any]) -> bool:
        return obj.get("apiVersion") == self.api_version and obj.get("kind") == self.kind

    def __str__(self) -> str:
        return self.kind


MODEL_BOOSTER: Final = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_MODEL_BOOSTER, c.PLURAL_MODEL_BOOSTERS)
MODEL_SERVING: Final = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_MODEL_SERVING, c.PLURAL_MODEL_SERVINGS)
MODEL_SERVER: Final = Kind(c.NETWORKING_GROUP, c.VERSION, c.KIND_MODEL_SERVER, c.PLURAL_MODEL_SERVERS)
MODEL_ROUTE: Final = Kind(c.NETWORKING_GROUP, c.VERSION, c.KIND_MODEL_ROUTE, c.PLURAL_MODEL_ROUTES)
AUTOSCALING_POLICY: Final = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_AUTOSCALING_POLICY, c.PLURAL_AUTOSCALING_POLICIES)
AUTOSCALING_POLICY_BINDING: Final = Kind(
    c.WORKLOAD_GROUP, c.VERSION, c.KIND_AUTOSCALING_POLICY_BINDING, c.PLURAL_AUTOSCALING_POLICY_BINDINGS
)
# Every kind a ModelBooster owns, in the order they are created (kthena-v0.1.0-facts §5.3).
CHILD_KINDS: Final = (MODEL_SERVING, MODEL_SERVER, MODEL_ROUTE, AUTOSCALING_POLICY, AUTOSCALING_POLICY_BINDING)

POD: Final = Kind("", "v1", "Pod", "pods")
CONFIG_MAP: Final = Kind("", "v1", "ConfigMap", "configmaps")
EVENT: Final = Kind("", "v1", "Event", "events")
LEASE: Final = Kind("coordination.k8s.io", "v1", "Lease", "leases")


def child_kind_of(obj: dict[str, Any]) -> Kind | None:
    """The child kind an object (e.g. from synthesis) belongs to, or None if it is not one of ours."""
    for kind in CHILD_KINDS:
        if kind.matches(obj):
            return kind
    return None
