"""Which uid label a backend's pods carry, so that what selects them finds them (docs/design/reconciler.md §16).

A ModelServing taken over as it runs keeps its pod template, and with it the uid label its pods were made with:
children `modelbooster render` printed before the API server gave the ModelBooster a uid carry the model's
stand-in (synthesis/owner.py). Until a rollout gives the pods the current rendering, the ModelServer selects them
by that label. Only the real uid or this model's own stand-in is ever followed: a template carrying anything else
(another model's uid, copied) does not turn this model's selector onto that model's pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from reconciler.modelbooster.kinds import MODEL_SERVER, MODEL_SERVING
from reconciler.modelbooster.synthesis.labels import stamp_revision
from reconciler.modelbooster.synthesis.owner import unowned_uid
from reconciler.runtime.apply import Desired
from reconciler.runtime.objects import metadata
from shared.constants import LABEL_BACKEND_NAME, LABEL_MODEL_UID


def template_uid(serving: Mapping[str, Any]) -> str | None:
    """The uid label every role's entry pods of a ModelServing carry; None when absent or not one value."""
    template = (serving.get("spec") or {}).get("template")
    roles = template.get("roles") if isinstance(template, dict) else None
    found: set[Any] = set()
    for role in roles if isinstance(roles, list) else ():
        entry = role.get("entryTemplate") if isinstance(role, dict) else None
        labels = metadata(entry).get("labels") if isinstance(entry, dict) else None
        found.add(labels.get(LABEL_MODEL_UID) if isinstance(labels, dict) else None)
    value = found.pop() if len(found) == 1 else None
    return value if isinstance(value, str) and value else None


def pods_uid(*, uid: str, namespace: str, name: str, serving: Mapping[str, Any]) -> str:
    """The uid label to select the pods of `serving`, a ModelServing of the ModelBooster `namespace/name` of `uid`,
    by: its template's, when that is this model's stand-in; else the ModelBooster's uid."""
    standin = unowned_uid(namespace, name)
    return standin if template_uid(serving) == standin else uid


def selecting_running_pods(booster: Mapping[str, Any], desired: Sequence[Desired]) -> list[Desired]:
    """`desired` with each ModelServer selecting its backend's pods by the uid label the ModelServing (as it is to
    be written: kept or rolled) gives them."""
    meta = metadata(dict(booster))
    uid, namespace, name = (str(meta.get(key) or "") for key in ("uid", "namespace", "name"))
    carried: dict[str, str] = {}
    for child in desired:
        if child.kind == MODEL_SERVING:
            carried[_backend(child)] = pods_uid(uid=uid, namespace=namespace, name=name, serving=child.obj)
    return [
        _selecting(child, carried[_backend(child)])
        if child.kind == MODEL_SERVER and carried.get(_backend(child), uid) != uid
        else child
        for child in desired
    ]


def _backend(child: Desired) -> str:
    return str((metadata(child.obj).get("labels") or {}).get(LABEL_BACKEND_NAME) or "")


def _selecting(child: Desired, value: str) -> Desired:
    spec = dict(child.obj["spec"])
    selector = dict(spec["workloadSelector"])
    selector["matchLabels"] = {**selector["matchLabels"], LABEL_MODEL_UID: value}
    spec["workloadSelector"] = selector
    meta = {**child.obj["metadata"], "labels": dict(child.obj["metadata"].get("labels") or {})}
    obj = stamp_revision({**child.obj, "metadata": meta, "spec": spec})
    return replace(child, obj=obj)
