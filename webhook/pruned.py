"""Telling, when it can, that the served ModelBooster CRD is older than this webhook (docs/design/upgrades.md §5).

kube-apiserver prunes the fields a CRD does not declare while decoding a request, before any webhook sees
the object (docs/chart.md, "Upgrades"). After `helm upgrade` without applying the new CRDs, a field this
version knows (`spec.backend`, say) is dropped silently, and what reaches the webhook is an object that no
longer says what the user wrote: with `spec.backend` gone it has neither backend shape, and the older CRD
answers with its own `spec.backends: Required value`, which does not say why.

The webhook cannot read the CRD (it has no API access), but `kubectl apply` (client-side, its default) keeps
the manifest it sent in the `kubectl.kubernetes.io/last-applied-configuration` annotation, which no schema
prunes. A field declared by this version's schema that is in that manifest and missing from the object was
pruned by the served CRD: so the CRD is older than this webhook. Then:
- the mutating webhook (which runs before the CRD's own validation) refuses an object left with neither
  backend shape, naming the dropped field and what to apply;
- any other dropped field is named in a warning (the object is admitted, as it would be without us).
Without that annotation (`kubectl create`, server-side apply, other clients) nothing can be told.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from typing import Any, Final

from shared.api.modelbooster import ModelBooster
from shared.backend_shape import LIST_FIELD, SINGLE_FIELD, shape_errors
from shared.crd_digest import APPLY_COMMAND
from shared.errors import FieldError
from shared.schema import structural_schema

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
# kube-apiserver caps all annotations of an object at 256 KiB together.
MAX_LAST_APPLIED: Final = 256 * 1024
MAX_DEPTH: Final = 12
MAX_PATHS: Final = 20
_CONTAINERS: Final = (dict, list)


@functools.cache
def _modelbooster_schema() -> Mapping[str, Any]:
    # The fields this version declares, as its CRD does (shared/crds.py builds the CRD from the same schema).
    return structural_schema(ModelBooster)


def _last_applied(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str) or len(text) > MAX_LAST_APPLIED:
        return None
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return manifest if isinstance(manifest, Mapping) else None


def pruned_paths(obj: Mapping[str, Any]) -> list[str]:
    """Paths this version's schema declares that the last applied manifest holds and `obj` lacks."""
    manifest = _last_applied(obj)
    if manifest is None:
        return []
    found: list[str] = []
    schema = _modelbooster_schema().get("properties", {}).get("spec", {})
    _walk(manifest.get("spec"), obj.get("spec"), schema, "spec", found, depth=0)
    return found


def _walk(sent: Any, kept: Any, schema: Mapping[str, Any], path: str, found: list[str], *, depth: int) -> None:
    # Decoded JSON holds plain dicts and lists: exact type tests, far cheaper than the ABCs' (every request
    # applied with kubectl comes through here).
    if depth > MAX_DEPTH or len(found) >= MAX_PATHS:
        return
    if type(sent) is dict and type(kept) is dict:
        properties = schema.get("properties")
        if type(properties) is not dict:
            return  # free-form or a map: nothing is pruned below
        for key, value in sent.items():
            declared = properties.get(key)
            if declared is None or value is None:
                continue  # unknown to this version too (or a null, which any schema drops)
            if key not in kept:
                found.append(f"{path}.{key}")
            elif type(value) in _CONTAINERS:
                _walk(value, kept[key], declared, f"{path}.{key}", found, depth=depth + 1)
    elif type(sent) is list and type(kept) is list and len(sent) == len(kept):
        items = schema.get("items")
        if type(items) is dict:
            for index, (one, other) in enumerate(zip(sent, kept, strict=True)):
                if type(one) in _CONTAINERS:
                    _walk(one, other, items, f"{path}[{index}]", found, depth=depth + 1)


def _older_crd(paths: list[str]) -> str:
    return (
        f"the API server dropped {', '.join(paths)} (kubectl's last-applied-configuration holds it): the served "
        f"ModelBooster CRD is older than this webhook and does not declare it; apply this release's CRDs: "
        f"{APPLY_COMMAND}"
    )


def older_crd_error(obj: Mapping[str, Any], paths: list[str]) -> FieldError | None:
    """The shape error for an object left with neither backend shape by an older CRD's pruning, told so;
    None for any other object."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or spec.get(SINGLE_FIELD) is not None or spec.get(LIST_FIELD) is not None:
        return None
    if not any(path in (f"spec.{SINGLE_FIELD}", f"spec.{LIST_FIELD}") for path in paths):
        return None
    errors = shape_errors(obj)
    if not errors:
        return None
    # The usual message for an object without a backend, then what really happened to it.
    return dataclasses.replace(errors[0], detail=f"{errors[0].detail}; {_older_crd(paths)}")


def older_crd_warning(paths: list[str]) -> str:
    return _older_crd(paths)
