"""Built-in kinds the fake stores without acting on them: what `helm install` of the chart creates besides
the kinds with behaviour of their own (builtin.py), and the workload and autoscaler kinds Inferno's Scale
actuation reads (`/scale` of Deployments, ReplicaSets, StatefulSets; HorizontalPodAutoscalers naming them). No
controller runs for them: a Deployment gets no ReplicaSet or pods, a Service no endpoints, an HPA scales
nothing. What kube-apiserver does on write is kept: `generation` bumped on spec changes of the kinds that track
it, status through its subresource only, server-side apply merging containers, ports, env and volumes by key as
their OpenAPI declares."""

from __future__ import annotations

from typing import Any

from tests.fakeapi.resources import ResourceInfo, Strategy, VersionInfo

Obj = dict[str, Any]


class StoredStrategy(Strategy):
    """Stored as sent; with `has_status`, `.status` is the status subresource's (registry strategies of
    Deployment, Service, PodDisruptionBudget)."""

    def __init__(self, *, has_status: bool = False) -> None:
        self.has_status = has_status

    def prepare_for_create(self, obj: Obj) -> None:
        if self.has_status:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if not self.has_status:
            return
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)


class SpecStrategy(StoredStrategy):
    """A kind whose `metadata.generation` counts its spec changes."""

    tracks_generation = True


WORKLOADS = (("deployments", "Deployment"), ("replicasets", "ReplicaSet"), ("statefulsets", "StatefulSet"))
# The workload kinds' `/scale` (their registry's scale strategy reads these fields; a label selector is left out).
_SCALE: Obj = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}


def _partial(properties: Obj) -> Obj:
    return {"type": "object", "x-fake-partial": True, "properties": properties}


def _keyed(*keys: str, item: Obj | None = None) -> Obj:
    return {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
        "items": item or {"type": "object", "x-fake-partial": True},
    }


_CONTAINER = _partial(
    {
        "ports": _keyed("containerPort", "protocol"),
        "env": _keyed("name"),
        "volumeMounts": _keyed("mountPath"),
    }
)
_POD_TEMPLATE = _partial(
    {
        "spec": _partial(
            {
                "containers": _keyed("name", item=_CONTAINER),
                "initContainers": _keyed("name", item=_CONTAINER),
                "volumes": _keyed("name"),
            }
        )
    }
)


def _kind(
    group: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    status: bool = False,
    generation: bool = False,
    type_schema: Obj | None = None,
    version: str = "v1",
    scale: bool = False,
) -> ResourceInfo:
    return ResourceInfo(
        group=group,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        versions={version: VersionInfo(version, status_subresource=status, scale=_SCALE if scale else None)},
        strategy=(SpecStrategy if generation else StoredStrategy)(has_status=status),
        type_schema=type_schema,
    )


def stored_resources() -> list[ResourceInfo]:
    rbac = "rbac.authorization.k8s.io"
    return [
        _kind("", "serviceaccounts", "ServiceAccount"),
        _kind(
            "",
            "services",
            "Service",
            status=True,
            type_schema=_partial({"spec": _partial({"ports": _keyed("port", "protocol")})}),
        ),
        *(
            _kind(
                "apps",
                plural,
                kind,
                status=True,
                generation=True,
                scale=True,
                type_schema=_partial({"spec": _partial({"template": _POD_TEMPLATE})}),
            )
            for plural, kind in WORKLOADS
        ),
        _kind(
            "autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler", status=True, generation=True,
            version="v2",
        ),
        _kind("policy", "poddisruptionbudgets", "PodDisruptionBudget", status=True, generation=True),
        # Written by the test harness in the EndpointSlice controller's place (a Service's ready pods).
        _kind("discovery.k8s.io", "endpointslices", "EndpointSlice"),
        _kind("networking.k8s.io", "networkpolicies", "NetworkPolicy", generation=True),
        _kind(rbac, "clusterroles", "ClusterRole", namespaced=False),
        _kind(rbac, "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
        _kind(rbac, "roles", "Role"),
        _kind(rbac, "rolebindings", "RoleBinding"),
    ]
