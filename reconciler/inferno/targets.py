"""What a Server's `targetRef` names, and what may be done to it (docs/design/inferno.md §13).

A target is any namespaced object with a `scale` subresource: its replicas are read and set through
`/scale` (autoscaling/v1 Scale), as HPA and KEDA do. The kinds we know (ModelServing, Deployment,
StatefulSet, ReplicaSet) need no `apiVersion`; any other kind names its `apiVersion`, and API discovery
says its plural and whether it has `/scale`.

A ModelServing that a ModelBooster controls is one of that ModelBooster's backends: its bounds are the
backend's `minReplicas`/`maxReplicas`, and Scale actuation needs the ModelBooster's external-replicas opt-in
and no AutoscalingPolicy on it (shared/external_scaling.py); otherwise the ModelBooster (restoring
replicas on drift) or Kthena's autoscaler would fight it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from reconciler.inferno.kinds import (
    AUTOSCALING_POLICY_BINDING,
    DEPLOYMENT,
    MODEL_BOOSTER,
    MODEL_SERVING,
    REPLICA_SET,
    STATEFUL_SET,
)
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text, metadata
from shared import constants as c
from shared.api.inferno import TargetRef
from shared.errors import ValidationFailed
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS, replicas_set_externally
from shared.validation import parse_modelbooster

# The kinds whose `/scale` the chart's ClusterRole grants (charts/modelbooster/templates/reconciler-rbac.yaml).
KNOWN_TARGETS: Final[dict[str, Kind]] = {
    MODEL_SERVING.kind: MODEL_SERVING,
    DEPLOYMENT.kind: DEPLOYMENT,
    STATEFUL_SET.kind: STATEFUL_SET,
    REPLICA_SET.kind: REPLICA_SET,
}
SCALE: Final = "scale"
MAX_DISCOVERY_CACHE: Final = 256


class TargetProblem(Exception):
    """The target cannot be read or must not be scaled; `reason` is the condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Scale:
    spec_replicas: int
    status_replicas: int | None  # None: the target's controller has not reported yet

    @property
    def observed(self) -> int:
        """The replicas running, as far as the target says (its spec before its controller reports)."""
        return self.spec_replicas if self.status_replicas is None else self.status_replicas


@dataclass(frozen=True)
class Bounds:
    minimum: int
    maximum: int
    source: str  # for messages: "backend a of ModelBooster m", "Server"

    def clamp(self, replicas: int) -> int:
        return min(max(replicas, self.minimum), self.maximum)


class Targets:
    """Resolves kinds (with a small discovery cache) and reads and writes targets through one client."""

    def __init__(self, client: KubeClient, *, field_manager: str) -> None:
        self.client = client
        self.field_manager = field_manager
        self._discovered: dict[tuple[str, str], Kind | str] = {}  # (apiVersion, kind) -> Kind, or why not
        self._lock = asyncio.Lock()
        # Per run (`new_run`): what many Servers of one namespace share is read once.
        self._bindings: dict[str, asyncio.Task[list[dict[str, Any]]]] = {}
        self._boosters: dict[tuple[str, str], asyncio.Task[dict[str, Any]]] = {}

    def new_run(self) -> None:
        """Forget what the last run read: each run sees the cluster as it is."""
        self._bindings.clear()
        self._boosters.clear()

    async def kind_of(self, ref: TargetRef) -> Kind:
        known = KNOWN_TARGETS.get(ref.kind)
        if known is not None and ref.api_version in (None, known.api_version):
            return known
        if ref.api_version is None:
            raise TargetProblem(
                "UnknownTargetKind",
                f"targetRef.kind {ref.kind!r} is not one of {', '.join(KNOWN_TARGETS)}: give targetRef.apiVersion",
            )
        key = (ref.api_version, ref.kind)
        async with self._lock:
            found = self._discovered.get(key)
            if found is None:
                found = await self._discover(ref.api_version, ref.kind)
                if len(self._discovered) >= MAX_DISCOVERY_CACHE:
                    self._discovered.clear()
                self._discovered[key] = found
        if isinstance(found, str):
            raise TargetProblem("UnknownTargetKind", found)
        return found

    async def _discover(self, api_version: str, kind: str) -> Kind | str:
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{api_version}" if group else f"/api/{version}"
        try:
            _, body = await self.client.request("GET", path)
        except ApiError as error:
            return f"API discovery of {api_version} failed: {error}"
        resources = body.get("resources") if isinstance(body, dict) else None
        names = {str(r.get("name")) for r in resources or () if isinstance(r, dict)}
        for resource in resources or ():
            if not isinstance(resource, dict) or resource.get("kind") != kind or "/" in str(resource.get("name")):
                continue
            plural = str(resource.get("name"))
            if f"{plural}/{SCALE}" not in names:
                return f"{kind} ({api_version}) has no scale subresource"
            if not resource.get("namespaced"):
                return f"{kind} ({api_version}) is cluster-scoped; a target must be in the Server's namespace"
            return Kind(group, version, kind, plural)
        return f"{api_version} serves no kind {kind!r}"

    async def read_scale(self, kind: Kind, namespace: str, name: str) -> Scale:
        try:
            _, body = await self.client.request("GET", kind.object_path(namespace, name, SCALE))
        except ApiError as error:
            if error.not_found:
                raise TargetProblem("TargetNotFound", f"{kind.kind} {namespace}/{name} not found") from None
            raise TargetProblem("TargetUnavailable", f"reading {kind.kind} {namespace}/{name} scale: {error}") from None
        spec = body.get("spec") if isinstance(body, dict) else None
        status = body.get("status") if isinstance(body, dict) else None
        replicas = (spec or {}).get("replicas", 0)
        observed = (status or {}).get("replicas")
        if not _is_count(replicas) or (observed is not None and not _is_count(observed)):
            raise TargetProblem("TargetUnavailable", f"{kind.kind} {namespace}/{name}: scale has no replica count")
        return Scale(spec_replicas=int(replicas), status_replicas=None if observed is None else int(observed))

    async def write_scale(self, kind: Kind, namespace: str, name: str, replicas: int) -> None:
        await self.client.patch(
            kind, namespace, name, {"spec": {"replicas": replicas}}, subresource=SCALE, field_manager=self.field_manager
        )

    async def bounds(
        self, kind: Kind, namespace: str, name: str, *, server_min: int | None, server_max: int | None
    ) -> Bounds:
        """The bounds Scale keeps to, or TargetProblem when the target must not be scaled by us."""
        if kind == MODEL_SERVING:
            serving_obj, owner = await self._owning_booster(namespace, name)
            if owner is not None:
                return await self._backend_bounds(owner, serving_obj, namespace=namespace, serving=name)
            await self._refuse_bound_serving(namespace, name)
        if server_max is None:
            raise TargetProblem(
                "BoundsRequired",
                f"{kind.kind} {name} belongs to no ModelBooster: set spec.maxReplicas (and spec.minReplicas, "
                "default 1) on the Server",
            )
        minimum = 1 if server_min is None else server_min
        return Bounds(minimum=min(minimum, server_max), maximum=server_max, source="Server")

    async def _owning_booster(self, namespace: str, serving: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The ModelServing, and the ModelBooster controlling it (None if none does)."""
        try:
            obj = await self.client.get(MODEL_SERVING, namespace, serving)
        except ApiError as error:
            raise TargetProblem("TargetUnavailable", f"reading ModelServing {namespace}/{serving}: {error}") from None
        for ref in metadata(obj).get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") == c.KIND_MODEL_BOOSTER:
                key = (namespace, str(ref.get("name")))
                if key not in self._boosters:  # one read per run for both backends of a ModelBooster
                    self._boosters[key] = asyncio.ensure_future(self.client.get(MODEL_BOOSTER, *key))
                try:
                    booster = await asyncio.shield(self._boosters[key])
                except ApiError as error:
                    raise TargetProblem(
                        "TargetUnavailable", f"reading ModelBooster {namespace}/{ref.get('name')}: {error}"
                    ) from None
                return obj, booster
        return obj, None

    async def _backend_bounds(
        self, booster: dict[str, Any], serving_obj: dict[str, Any], *, namespace: str, serving: str
    ) -> Bounds:
        booster_name = meta_text(booster, "name")
        try:
            model = parse_modelbooster(booster)
        except (ValidationFailed, ValidationError) as error:
            raise TargetProblem("InvalidModelBooster", f"ModelBooster {booster_name} is not valid: {error}") from None
        if not replicas_set_externally(model.metadata.annotations):
            raise TargetProblem(
                "ExternalScalingNotEnabled",
                f"ModelServing {serving} is a backend of ModelBooster {booster_name}, which restores its replicas: "
                f"annotate the ModelBooster {ANNOTATION_EXTERNAL_REPLICAS}: \"true\" to let Inferno scale it",
            )
        labels = metadata(serving_obj).get("labels") or {}
        backend_name = labels.get(c.LABEL_BACKEND_NAME)
        for backend in model.spec.backends:
            if backend.name != backend_name and f"{booster_name}-{backend.name}" != serving:
                continue
            if model.spec.autoscaling_policy is not None or backend.autoscaling_policy is not None:
                raise TargetProblem(
                    "AutoscalerConflict",
                    f"backend {backend.name} of ModelBooster {booster_name} is scaled by an AutoscalingPolicy: "
                    "remove the policy or Scale actuation",
                )
            await self._refuse_bound_serving(namespace, serving)
            return Bounds(
                minimum=backend.min_replicas,
                maximum=backend.max_replicas,
                source=f"backend {backend.name} of ModelBooster {booster_name}",
            )
        raise TargetProblem(
            "TargetNotFound", f"ModelServing {serving} matches no backend of ModelBooster {booster_name}"
        )

    async def _refuse_bound_serving(self, namespace: str, serving: str) -> None:
        """An AutoscalingPolicyBinding (anyone's) that scales this ModelServing: Kthena's autoscaler owns it."""
        if namespace not in self._bindings:  # one list per namespace and run
            self._bindings[namespace] = asyncio.ensure_future(self._list_bindings(namespace))
        try:
            bindings = await asyncio.shield(self._bindings[namespace])
        except ApiError as error:
            if error.not_found:  # the CRD is not installed: nothing can bind it
                return
            raise TargetProblem("TargetUnavailable", f"listing AutoscalingPolicyBindings: {error}") from None
        for binding in bindings:
            if _binding_targets(binding.get("spec") or {}, serving):
                name = meta_text(binding, "name")
                raise TargetProblem(
                    "AutoscalerConflict",
                    f"AutoscalingPolicyBinding {name} scales ModelServing {serving}: remove it or Scale actuation",
                )


    async def _list_bindings(self, namespace: str) -> list[dict[str, Any]]:
        return (await self.client.list(AUTOSCALING_POLICY_BINDING, namespace=namespace)).items


def _binding_targets(spec: Mapping[str, Any], serving: str) -> bool:
    """Whether a binding's spec names the ModelServing (homogeneous `scalingConfiguration.target` or one of a
    heterogeneous `optimizerConfiguration.params[].target`)."""
    targets: list[Any] = []
    scaling = spec.get("scalingConfiguration")
    if isinstance(scaling, Mapping):
        targets.append(scaling.get("target"))
    optimizer = spec.get("optimizerConfiguration")
    if isinstance(optimizer, Mapping):
        targets.extend(param.get("target") for param in optimizer.get("params") or () if isinstance(param, Mapping))
    for target in targets:
        ref = target.get("targetRef") if isinstance(target, Mapping) else None
        if (
            isinstance(ref, Mapping)
            and ref.get("kind", c.KIND_MODEL_SERVING) == c.KIND_MODEL_SERVING
            and ref.get("name") == serving
        ):
            return True
    return False


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
