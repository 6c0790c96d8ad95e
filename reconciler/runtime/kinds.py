"""Resource kinds the controllers read and write, and the REST paths that address them.

A `Kind` is everything the generic machinery (client, informers, controllers) needs to know about a resource:
group, version, kind and plural. Nothing here is specific to a controller: our API's kinds are declared once in
reconciler/api/kinds.py (each controller's kinds.py names the ones it uses, and declares the built-in kinds only it
uses), and the built-in kinds that the runtime itself or several controllers use are at the bottom.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote


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


POD: Final = Kind("", "v1", "Pod", "pods")
NAMESPACE: Final = Kind("", "v1", "Namespace", "namespaces", namespaced=False)
CONFIG_MAP: Final = Kind("", "v1", "ConfigMap", "configmaps")
EVENT: Final = Kind("", "v1", "Event", "events")
LEASE: Final = Kind("coordination.k8s.io", "v1", "Lease", "leases")
DEPLOYMENT: Final = Kind("apps", "v1", "Deployment", "deployments")
