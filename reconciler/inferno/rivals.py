"""Other scalers of a target (an HPA, a KEDA ScaledObject, Kthena's autoscaler, another Server), which Scale
actuation keeps off: two writers of one `/scale` undo each other every period (docs/design/inferno.md §18)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from reconciler.inferno.kinds import AUTOSCALING_POLICY_BINDING, HORIZONTAL_POD_AUTOSCALER, SCALED_OBJECT
from reconciler.inferno.targets import TargetProblem
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text
from shared import constants as c

PAGE: Final = 500
MAX_SCALERS: Final = 10_000
# KEDA's default target kind when a ScaledObject's scaleTargetRef names none.
KEDA_DEFAULT_KIND: Final = ("apps", "Deployment")


@dataclass(frozen=True)
class Scaler:
    """Another scaler and the target it names (group "" when its reference gives no apiVersion)."""

    kind: str  # "HorizontalPodAutoscaler", ...
    name: str
    target_group: str | None  # None: any group
    target_kind: str
    target_name: str

    def names(self, kind: Kind, name: str) -> bool:
        return (
            self.target_name == name
            and self.target_kind == kind.kind
            and (self.target_group is None or self.target_group == kind.group)
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


class Rivals:
    """The other scalers of one namespace, read once per run (`new_run`)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._listed: dict[tuple[str, Kind], asyncio.Task[list[Scaler]]] = {}

    def new_run(self) -> None:
        self._listed.clear()

    async def scaling(self, kind: Kind, namespace: str, name: str) -> list[Scaler]:
        """The scalers naming this target (HPAs, ScaledObjects, and for a ModelServing, policy bindings)."""
        sources = [HORIZONTAL_POD_AUTOSCALER, SCALED_OBJECT]
        if kind.kind == c.KIND_MODEL_SERVING:
            sources.append(AUTOSCALING_POLICY_BINDING)
        found: list[Scaler] = []
        for source in sources:
            found.extend(scaler for scaler in await self._scalers(source, namespace) if scaler.names(kind, name))
        return found

    async def _scalers(self, source: Kind, namespace: str) -> list[Scaler]:
        key = (namespace, source)
        if key not in self._listed:  # one list per kind, namespace and run, shared by every Server there
            self._listed[key] = asyncio.ensure_future(self._list(source, namespace))
        try:
            return await asyncio.shield(self._listed[key])
        except ApiError as error:
            raise TargetProblem(
                "TargetUnavailable", f"cannot tell whether a {source.kind} scales it: listing {source.plural}: {error}"
            ) from None

    async def _list(self, source: Kind, namespace: str) -> list[Scaler]:
        reduce = _READERS[source.kind]
        scalers: list[Scaler] = []
        token: str | None = None
        seen = 0
        while True:
            try:
                page = await self.client.list(source, namespace=namespace, limit=PAGE, continue_token=token)
            except ApiError as error:
                if error.not_found:  # the kind is not served (KEDA or the binding CRD not installed): none
                    return []
                raise
            seen += len(page.items)
            if seen > MAX_SCALERS:
                raise TargetProblem(
                    "TargetUnavailable",
                    f"cannot tell whether a {source.kind} scales it: more than {MAX_SCALERS} in {namespace}",
                )
            for obj in page.items:
                scalers.extend(reduce(obj))
            token = page.continue_token
            if not token:
                return scalers


def _ref_scaler(kind: str, obj: Mapping[str, Any], ref: Any, *, default: tuple[str, str] | None) -> list[Scaler]:
    """The Scaler a `scaleTargetRef`-shaped reference {apiVersion?, kind?, name} makes, if it is one."""
    if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str):
        return []
    api_version, target_kind = ref.get("apiVersion"), ref.get("kind")
    group: str | None = None
    if isinstance(api_version, str) and api_version:
        group = api_version.rpartition("/")[0]
    elif default is not None:
        group = default[0]
    if not isinstance(target_kind, str) or not target_kind:
        if default is None:
            return []
        target_kind = default[1]
    return [Scaler(kind, meta_text(obj, "name"), group, target_kind, ref["name"])]


def _hpa(obj: Mapping[str, Any]) -> list[Scaler]:
    spec = obj.get("spec")
    ref = spec.get("scaleTargetRef") if isinstance(spec, Mapping) else None
    return _ref_scaler(HORIZONTAL_POD_AUTOSCALER.kind, obj, ref, default=None)


def _scaled_object(obj: Mapping[str, Any]) -> list[Scaler]:
    spec = obj.get("spec")
    ref = spec.get("scaleTargetRef") if isinstance(spec, Mapping) else None
    return _ref_scaler(SCALED_OBJECT.kind, obj, ref, default=KEDA_DEFAULT_KIND)


def _binding(obj: Mapping[str, Any]) -> list[Scaler]:
    """A binding's targets: homogeneous `scalingConfiguration.target` or heterogeneous
    `optimizerConfiguration.params[].target`, each a `targetRef` to a ModelServing (the default kind)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    targets: list[Any] = []
    scaling = spec.get("scalingConfiguration")
    if isinstance(scaling, Mapping):
        targets.append(scaling.get("target"))
    optimizer = spec.get("optimizerConfiguration")
    params = optimizer.get("params") if isinstance(optimizer, Mapping) else None
    if isinstance(params, list):
        targets.extend(param.get("target") for param in params if isinstance(param, Mapping))
    found: list[Scaler] = []
    for target in targets:
        ref = target.get("targetRef") if isinstance(target, Mapping) else None
        found.extend(
            _ref_scaler(AUTOSCALING_POLICY_BINDING.kind, obj, ref, default=(c.WORKLOAD_GROUP, c.KIND_MODEL_SERVING))
        )
    return found


_READERS: Final = {
    HORIZONTAL_POD_AUTOSCALER.kind: _hpa,
    SCALED_OBJECT.kind: _scaled_object,
    AUTOSCALING_POLICY_BINDING.kind: _binding,
}
