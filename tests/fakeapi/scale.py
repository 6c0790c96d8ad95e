"""The `scale` subresource of custom resources (apiextensions-apiserver's scale registry).

`GET .../<name>/scale` answers an autoscaling/v1 Scale built from the paths the CRD names
(`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`); `PUT` and `PATCH` (JSON merge or JSON patch)
of a Scale set the object's replicas at `specReplicasPath` through an ordinary update of the object, so
validation, generation, watches and the request log behave as for any other write.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.fakeapi import errors as e
from tests.fakeapi import patch
from tests.fakeapi.rest import Registry, Request
from tests.fakeapi.util import deep_copy

Obj = dict[str, Any]


def _steps(path: str) -> list[str]:
    return [step for step in path.lstrip(".").split(".") if step]


def _read(obj: Obj, path: str | None) -> Any:
    value: Any = obj
    for step in _steps(path or ""):
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value if path else None


def _scale_of(obj: Obj, spec: Obj) -> Obj:
    meta = obj.get("metadata", {})
    status: Obj = {"replicas": _read(obj, spec.get("statusReplicasPath")) or 0}
    selector = _read(obj, spec.get("labelSelectorPath"))
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        },
        "spec": {"replicas": _read(obj, spec.get("specReplicasPath")) or 0},
        "status": status,
    }


async def serve(
    registry: Registry, req: Request, verb: str, *, body: Any, raw: bytes, content_type: str
) -> tuple[int, Obj]:
    spec = req.res.scale(req.version) or {}
    main = replace(req, subresource="")
    current = registry.get(main)
    scale = _scale_of(current, spec)
    if verb == "get":
        return 200, scale
    if verb == "update":
        wanted = body
    elif verb == "patch":
        try:
            parsed = json.loads(raw or b"null")
        except ValueError as err:
            raise e.bad_request(f"couldn't get version/kind; json parse error: {err}") from err
        if content_type == patch.JSON_PATCH:
            wanted = patch.json_patch(scale, parsed)
        elif content_type == patch.MERGE_PATCH:
            wanted = patch.merge_patch(scale, parsed)
        else:
            raise e.unsupported_media_type([patch.JSON_PATCH, patch.MERGE_PATCH])
    else:
        raise e.method_not_supported(req.res.group_resource, verb)
    replicas = (wanted.get("spec") or {}).get("replicas") if isinstance(wanted, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise e.invalid_object(
            e.GroupKind("autoscaling", "Scale"),
            req.name,
            [e.invalid("spec.replicas", e.RawValue(str(replicas)), "must be greater than or equal to 0")],
        )
    updated = deep_copy(current)
    steps = _steps(str(spec.get("specReplicasPath") or ".spec.replicas"))
    node = updated
    for step in steps[:-1]:
        node = node.setdefault(step, {})
    node[steps[-1]] = replicas
    _, stored = await registry.update(main, updated)
    return 200, _scale_of(stored, spec)
