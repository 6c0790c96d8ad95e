"""Whether a Server's Scale actuation may set its target, and within what bounds: the reconciler may patch every
workload's `/scale` and a Server's author may not, so it acts only where someone allowed to change the target
consented, for a target no controller and no other scaler drives (docs/design/inferno.md §18)."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError

from reconciler.inferno.kinds import MODEL_BOOSTER, MODEL_SERVING
from reconciler.inferno.rivals import Rivals
from reconciler.inferno.targets import Bounds, TargetProblem, Targets
from reconciler.runtime.client import ApiError
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import meta_text, metadata
from shared import constants as c
from shared.errors import ValidationFailed
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS, replicas_set_externally
from shared.scaling_consent import consent_hint, servers_named
from shared.validation import parse_modelbooster

REASON_CONSENT_MISSING = "ConsentMissing"
REASON_CONTROLLED = "ControlledTarget"
REASON_CONFLICT = "AutoscalerConflict"
MAX_NAMED = 3  # other scalers named in one message


class ScalingGate:
    """Decides, per run (`new_run`), whether each Scale Server may set its target (module docstring)."""

    def __init__(self, targets: Targets, rivals: Rivals) -> None:
        self.targets = targets
        self.rivals = rivals
        self._boosters: dict[tuple[str, str], asyncio.Task[dict[str, Any]]] = {}

    def new_run(self) -> None:
        """Forget what the last run read: each run sees the cluster as it is."""
        self._boosters.clear()
        self.rivals.new_run()

    async def admit(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        *,
        server: str,
        server_min: int | None,
        server_max: int | None,
        rival_servers: Collection[str] = (),
    ) -> Bounds:
        """The bounds Scale keeps to, or TargetProblem saying who has not consented or who else scales it.
        `rival_servers`: the other Servers of the namespace whose Scale actuation names this target."""
        target = await self.targets.read(kind, namespace, name)
        owner = _controller(target)
        what = f"{kind.kind} {name}"
        if kind == MODEL_SERVING and owner is not None and _is_booster(owner):
            booster = await self._booster(namespace, str(owner.get("name")))
            bounds, consented = self._backend(booster, target, serving=name, server=server)
        elif owner is not None:
            raise TargetProblem(
                REASON_CONTROLLED,
                f"{what} is controlled by {owner.get('kind')} {owner.get('name')}, which sets its replicas: "
                f"target the {owner.get('kind')} instead",
            )
        else:
            consented = servers_named(metadata(target).get("annotations"))
            if server not in consented:
                raise TargetProblem(REASON_CONSENT_MISSING, _no_consent(what, server, consented, on=what))
            bounds = _server_bounds(what, server_min=server_min, server_max=server_max)
        others = [str(scaler) for scaler in await self.rivals.scaling(kind, namespace, name)]
        others.extend(f"Server {rival}" for rival in sorted(rival_servers) if rival in consented and rival != server)
        if others:
            named = ", ".join(others[:MAX_NAMED]) + (f" and {len(others) - MAX_NAMED} more" if len(others) > MAX_NAMED
                                                     else "")  # fmt: skip
            raise TargetProblem(
                REASON_CONFLICT, f"{what} is also scaled by {named}: two scalers would undo each other; remove one"
            )
        return bounds

    async def _booster(self, namespace: str, name: str) -> dict[str, Any]:
        key = (namespace, name)
        if key not in self._boosters:  # one read per run for every backend of a ModelBooster
            self._boosters[key] = asyncio.ensure_future(self.targets.client.get(MODEL_BOOSTER, *key))
        try:
            return await asyncio.shield(self._boosters[key])
        except ApiError as error:
            raise TargetProblem("TargetUnavailable", f"reading ModelBooster {namespace}/{name}: {error}") from None

    @staticmethod
    def _backend(
        booster: dict[str, Any], serving_obj: dict[str, Any], *, serving: str, server: str
    ) -> tuple[Bounds, frozenset[str]]:
        """The backend's bounds and the Servers its ModelBooster consents to."""
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
        consented = servers_named(model.metadata.annotations)
        if server not in consented:
            subject = f"ModelServing {serving} is a backend of ModelBooster {booster_name}, which"
            raise TargetProblem(
                REASON_CONSENT_MISSING,
                _no_consent(subject, server, consented, on=f"ModelBooster {booster_name}"),
            )
        backend_name = (metadata(serving_obj).get("labels") or {}).get(c.LABEL_BACKEND_NAME)
        for backend in model.spec.backends:
            if backend.name != backend_name and f"{booster_name}-{backend.name}" != serving:
                continue
            if model.spec.autoscaling_policy is not None or backend.autoscaling_policy is not None:
                raise TargetProblem(
                    REASON_CONFLICT,
                    f"backend {backend.name} of ModelBooster {booster_name} is scaled by an AutoscalingPolicy: "
                    "remove the policy or Scale actuation",
                )
            bounds = Bounds(
                minimum=backend.min_replicas,
                maximum=backend.max_replicas,
                source=f"backend {backend.name} of ModelBooster {booster_name}",
            )
            return bounds, consented
        raise TargetProblem(
            "TargetNotFound", f"ModelServing {serving} matches no backend of ModelBooster {booster_name}"
        )


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in metadata(obj).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def _is_booster(ref: Mapping[str, Any]) -> bool:
    return ref.get("kind") == c.KIND_MODEL_BOOSTER and str(ref.get("apiVersion") or "").startswith(
        f"{c.WORKLOAD_GROUP}/"
    )


def _no_consent(subject: str, server: str, consented: frozenset[str], *, on: str) -> str:
    """`subject` (a target, or "... which") has not named `server`: say so, and how to."""
    hint = consent_hint(server, on=on, named=consented)
    if consented:
        return f"{subject} lets only Server {', '.join(sorted(consented))} scale it, not {server}; {hint}"
    return f"{subject} names no Server that may scale it; {hint}"


def _server_bounds(what: str, *, server_min: int | None, server_max: int | None) -> Bounds:
    if server_max is None:
        raise TargetProblem(
            "BoundsRequired",
            f"{what} belongs to no ModelBooster: set spec.maxReplicas (and spec.minReplicas, default 1) on the Server",
        )
    minimum = 1 if server_min is None else server_min
    return Bounds(minimum=min(minimum, server_max), maximum=server_max, source="Server")
