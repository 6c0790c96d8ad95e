"""Pruning a ModelBooster's children (docs/design/reconciler.md §6): what it controls and no longer wants, and
the orphans of its model it does not want, found through two indexes of the child informers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reconciler.modelbooster.status import Findings
from reconciler.runtime.apply import Desired, controller_ref, delete_child, is_controlled_by
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import metadata
from reconciler.runtime.outage import is_unavailable
from shared.constants import LABEL_MODEL_NAME

# Children by the uid of their ModelBooster (its label), and by "<namespace>/<model name>": orphans of a model.
UID_INDEX: Final = "model-uid"
MODEL_INDEX: Final = "model-name"


def model_index(obj: dict[str, Any]) -> Iterable[str]:
    meta = metadata(obj)
    model = (meta.get("labels") or {}).get(LABEL_MODEL_NAME)
    return [f"{meta.get('namespace')}/{model}"] if model is not None else []


@dataclass(frozen=True)
class Stale:
    children: tuple[tuple[Kind, dict[str, Any]], ...]
    orphans: bool  # some have no controller: deleting them needs the owner read afresh first


@dataclass(frozen=True)
class Pruned:
    deleted: tuple[str, ...] = ()  # "<Kind> <name>"
    kinds: tuple[str, ...] = ()  # the kind of each deleted child
    findings: Findings = field(default_factory=Findings)


def stale_children(caches: Mapping[Kind, Informer], booster: dict[str, Any], desired: Sequence[Desired]) -> Stale:
    """The children this ModelBooster controls and no longer wants, and its orphans it does not want (as a
    ReplicaSet adopts matching orphans and then scales away the excess): objects of its model without a
    controller reference, e.g. a removed backend's children left by `--cascade=orphan`."""
    wanted = {(child.kind, child.name) for child in desired}
    meta = booster["metadata"]
    uid = str(meta.get("uid"))
    model_key = f"{meta.get('namespace')}/{meta.get('name')}"
    stale: list[tuple[Kind, dict[str, Any]]] = []
    orphans = False
    for kind, informer in caches.items():
        for live in informer.by_index(UID_INDEX, uid):
            name = str(metadata(live).get("name"))
            if (kind, name) not in wanted and is_controlled_by(live, uid):
                stale.append((kind, live))
        for live in informer.by_index(MODEL_INDEX, model_key):
            name = str(metadata(live).get("name"))
            if (kind, name) not in wanted and controller_ref(live) is None and (kind, live) not in stale:
                stale.append((kind, live))
                orphans = True
    return Stale(tuple(stale), orphans)


async def delete_stale(client: KubeClient, caches: Mapping[Kind, Informer], stale: Stale) -> Pruned:
    results = await asyncio.gather(
        *(delete_child(client=client, cache=caches[kind], kind=kind, live=live) for kind, live in stale.children),
        return_exceptions=True,
    )
    deleted: list[str] = []
    kinds: list[str] = []
    failures: list[str] = []
    unavailable = 0
    for (kind, live), result in zip(stale.children, results, strict=True):
        ref = f"{kind.kind} {(live.get('metadata') or {}).get('name')}"
        if result is True:
            deleted.append(ref)
            kinds.append(kind.kind)
        elif isinstance(result, ApiError):
            failures.append(f"deleting stale {ref} failed: {result}")
            unavailable += is_unavailable(result)
        elif isinstance(result, BaseException):
            raise result
    return Pruned(tuple(deleted), tuple(kinds), Findings(failures=tuple(failures), unavailable=unavailable))
