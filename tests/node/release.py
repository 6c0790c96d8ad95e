"""The chart as a user installs it on the node: `helm install/upgrade/uninstall` through Helm's Go SDK
(helm-python-sdk, no helm binary), and what "healthy" means for a release between two scenarios."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import helm_python as helm

from tests.node.api import Api, wait_for

RELEASE: Final = "mb"
NAMESPACE: Final = "modelbooster-system"
HELM_TIMEOUT: Final = 300
WEBHOOK: Final = f"{RELEASE}-modelbooster-webhook"
RECONCILER: Final = f"{RELEASE}-modelbooster-reconciler"
LEASE: Final = RECONCILER
CONFIGURATION: Final = f"{RELEASE}-modelbooster"
SELECTOR: Final = "app.kubernetes.io/instance=" + RELEASE


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


@dataclass
class Release:
    chart: Path
    image: str  # REPOSITORY:TAG as build-image imported it
    kubeconfig: Path
    api: Api
    # Values of the current install; scenarios change a copy (replicas, a rollout annotation).
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        repository, _, tag = self.image.rpartition(":")
        self.values = _merge({"image": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}},
                             self.values)  # fmt: skip

    def _helm(self) -> helm.Config:
        return helm.Config(kubeconfig_path=str(self.kubeconfig), namespace=NAMESPACE)

    def install(self) -> None:
        self._helm().install(str(self.chart), RELEASE, self.values, namespace=NAMESPACE, create_namespace=True,
                             wait="watcher", timeout=HELM_TIMEOUT)  # fmt: skip

    def upgrade(self, values: Mapping[str, Any]) -> None:
        """`helm upgrade` with these values merged over the current ones (kept for later upgrades)."""
        self.values = _merge(self.values, values)
        self._helm().upgrade(str(self.chart), RELEASE, self.values, namespace=NAMESPACE, wait="watcher",
                             timeout=HELM_TIMEOUT)  # fmt: skip

    def uninstall(self) -> None:
        """`helm uninstall` as users run it: returns once Helm has deleted the release's objects."""
        self._helm().uninstall(RELEASE, timeout=HELM_TIMEOUT)

    def installed(self) -> bool:
        return any(item.get("name") == RELEASE for item in self._helm().list())

    # ------------------------------------------------------------------ state
    def pods(self, component: str) -> list[dict[str, Any]]:
        return self.api.items(f"/api/v1/namespaces/{NAMESPACE}/pods",
                              labelSelector=f"{SELECTOR},app.kubernetes.io/component={component}")  # fmt: skip

    def lease_holder(self) -> str:
        lease = self.api.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}")
        return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")

    def leader_pod(self) -> str:
        """The reconciler pod holding the Lease (identities are `<pod>_<suffix>`)."""
        holder = self.lease_holder()
        names = [str(meta(pod)["name"]) for pod in self.pods("reconciler")]
        for name in names:
            if holder.startswith(name + "_") or holder == name:
                return name
        raise LookupError(f"no reconciler pod {names} holds Lease {LEASE} (holder {holder!r})")

    def wait_healthy(self, *, webhooks: int = 2, reconcilers: int | None = None, timeout: float = 180.0) -> float:
        """Both Deployments rolled out, only their current pods left, a leader among them, the webhook
        Service with `webhooks` ready endpoints, and both webhook configurations enforced (entries with a
        caBundle); the seconds it took."""
        if reconcilers is None:
            reconcilers = int(self.values.get("reconciler", {}).get("replicas", 1))
        started = time.monotonic()

        def settled() -> bool:
            for component, count in (("webhook", webhooks), ("reconciler", reconcilers)):
                pods = self.pods(component)
                if len(pods) != count or not all(ready(pod) and not meta(pod).get("deletionTimestamp")
                                                   for pod in pods):  # fmt: skip
                    return False
            self.leader_pod()
            return self.ready_endpoints() == webhooks and self.enforced()

        def settled_or_no_leader() -> bool:
            try:
                return settled()
            except LookupError:
                return False

        wait_for(f"release {RELEASE} healthy", settled_or_no_leader, timeout=timeout)
        return time.monotonic() - started

    def enforced(self) -> bool:
        """Both webhook configurations have their entry, each with a caBundle."""
        for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            configuration = self.api.get_or_none(f"/apis/admissionregistration.k8s.io/v1/{plural}/{CONFIGURATION}")
            entries = (configuration or {}).get("webhooks") or []
            if not entries or not all((entry.get("clientConfig") or {}).get("caBundle") for entry in entries):
                return False
        return True

    def ready_endpoints(self) -> int:
        slices = self.api.items(f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices",
                                labelSelector=f"kubernetes.io/service-name={WEBHOOK}")  # fmt: skip
        return sum(
            1
            for piece in slices
            for endpoint in piece.get("endpoints") or []
            if (endpoint.get("conditions") or {}).get("ready")
        )


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
