"""What a Server's `targetRef` names: its kind (the known ones, or found by API discovery, a miss asked again
soon), its `/scale`, the object itself, and the engine that serves it (the same-named ModelServer's
`inferenceEngine`, as Kthena's router reads it) (docs/design/inferno.md §13). Whether it may be scaled is
consent.py's and rivals.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from reconciler.inferno.kinds import DEPLOYMENT, MODEL_SERVER, MODEL_SERVING, REPLICA_SET, STATEFUL_SET
from reconciler.runtime.client import JSON_PATCH, ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from shared.api.inferno import TargetRef
from shared.engines.series import EngineSeries, default_series, series_for

# The kinds whose `/scale` the chart's ClusterRole grants (charts/modelbooster/templates/_helpers.tpl);
# `inferno.extraTargetKinds` adds others there, found here by discovery.
KNOWN_TARGETS: Final[dict[str, Kind]] = {
    MODEL_SERVING.kind: MODEL_SERVING,
    DEPLOYMENT.kind: DEPLOYMENT,
    STATEFUL_SET.kind: STATEFUL_SET,
    REPLICA_SET.kind: REPLICA_SET,
}
SCALE: Final = "scale"
MAX_DISCOVERY_CACHE: Final = 256
DISCOVERY_TTL: Final = 600.0  # a kind found: a CRD may still lose its /scale or go
NEGATIVE_DISCOVERY_TTL: Final = 30.0  # a kind not found, or discovery failing: asked again after this
HTTP_FORBIDDEN: Final = 403


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
    source: str  # for messages: "backend a of ModelBooster m", "Server", "..., operator ceiling 100"

    def clamp(self, replicas: int) -> int:
        return min(max(replicas, self.minimum), self.maximum)


class Targets:
    """Resolves kinds (with a small, expiring discovery cache) and reads and writes targets through one client."""

    def __init__(
        self, client: KubeClient, *, field_manager: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.field_manager = field_manager
        self._clock = clock
        # (apiVersion, kind) -> (Kind, or why not; when it expires), oldest first.
        self._discovered: OrderedDict[tuple[str, str], tuple[Kind | str, float]] = OrderedDict()
        self._lock = asyncio.Lock()

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
            cached = self._discovered.get(key)
            if cached is None or cached[1] <= self._clock():
                found = await self._discover(ref.api_version, ref.kind)
                ttl = NEGATIVE_DISCOVERY_TTL if isinstance(found, str) else DISCOVERY_TTL
                self._discovered.pop(key, None)
                self._discovered[key] = (found, self._clock() + ttl)
                while len(self._discovered) > MAX_DISCOVERY_CACHE:
                    self._discovered.popitem(last=False)
            else:
                found = cached[0]
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
            raise _unreadable(error, kind, namespace, name, what="scale") from None
        spec = body.get("spec") if isinstance(body, dict) else None
        status = body.get("status") if isinstance(body, dict) else None
        replicas = (spec or {}).get("replicas", 0)
        observed = (status or {}).get("replicas")
        if not _is_count(replicas) or (observed is not None and not _is_count(observed)):
            raise TargetProblem("TargetUnavailable", f"{kind.kind} {namespace}/{name}: scale has no replica count")
        return Scale(spec_replicas=int(replicas), status_replicas=None if observed is None else int(observed))

    async def read(self, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        """The target object itself (its annotations and owner references say who may scale it)."""
        try:
            return await self.client.get(kind, namespace, name)
        except ApiError as error:
            raise _unreadable(error, kind, namespace, name, what="object") from None

    async def engine_of(self, namespace: str, name: str) -> EngineSeries:
        """The series of the engine serving target `name` (module docstring); TargetProblem when the ModelServer
        cannot be read."""
        try:
            server = await self.client.get(MODEL_SERVER, namespace, name)
        except ApiError as error:
            # Forbidden too: RBAC written before this read (the chart grants it) keeps reading vLLM as it did.
            if error.not_found or error.status == HTTP_FORBIDDEN:
                return default_series()
            raise TargetProblem("TargetUnavailable", f"reading ModelServer {namespace}/{name}: {error}") from None
        engine = (server.get("spec") or {}).get("inferenceEngine") if isinstance(server, dict) else None
        return (series_for(engine) if isinstance(engine, str) else None) or default_series()

    async def write_scale(self, kind: Kind, namespace: str, name: str, replicas: int) -> None:
        await self.client.patch(
            kind, namespace, name, {"spec": {"replicas": replicas}}, subresource=SCALE, field_manager=self.field_manager
        )


    async def write_roles(self, kind: Kind, namespace: str, name: str, patch: list[dict[str, Any]]) -> None:
        """A JSON patch of a disaggregated target's role replicas (reconciler.inferno.roles.roles_patch)."""
        await self.client.patch(
            kind, namespace, name, patch, patch_type=JSON_PATCH, field_manager=self.field_manager
        )


def _unreadable(error: ApiError, kind: Kind, namespace: str, name: str, *, what: str) -> TargetProblem:
    if error.not_found:
        return TargetProblem("TargetNotFound", f"{kind.kind} {namespace}/{name} not found")
    return TargetProblem("TargetUnavailable", f"reading {kind.kind} {namespace}/{name} {what}: {error}")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
