"""The two ways a ModelBooster names its backends, and the rules about choosing one (docs/design/api.md §8).

- `spec.backend`: one backend, the form of Kthena v1.0 and later (`replicas`, no autoscaling, no LoRA);
- `spec.backends`: a list of backends, the form of Kthena v0.1.0 (autoscaling, LoRA, route weights).

Exactly one is given; which one is the user's choice and is never rewritten into the other. Internally the
single backend is read as a list of one (shared/api/modelbooster.py), so every rule and every child is derived
by one code path; this module maps what that path reports (`spec.backends[0]...`) back to the field the user
wrote (`spec.backend...`).

The rules live here once and feed the webhook's check (on the raw object, before decoding: which schema applies
depends on the answer) and the CRD's CEL rules on `spec`, with the same message, so that kube-apiserver prints
the webhook's line when the webhook is down. Both rules test presence only, so their cost is constant.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any, Final

from shared.errors import FieldError, forbidden, required

SINGLE_FIELD: Final = "backend"
LIST_FIELD: Final = "backends"
AUTOSCALING_FIELD: Final = "autoscalingPolicy"

SHAPE_DETAIL: Final = (
    "exactly one of spec.backend (one backend, as Kthena v1.0 writes it) or spec.backends (a list of backends), "
    "not both"
)
SINGLE_AUTOSCALING_DETAIL: Final = (
    "a single spec.backend has no autoscaling: it runs spec.backend.replicas replicas; to autoscale, move the "
    "backend into spec.backends and give it minReplicas and maxReplicas"
)

_LIST_PREFIX: Final = f"spec.{LIST_FIELD}"
_FIRST_PREFIX: Final = f"{_LIST_PREFIX}[0]"
_SINGLE_PATH: Final = f"spec.{SINGLE_FIELD}"
_LIST_ITEM: Final = re.compile(r"spec\.backends\[\d+\]")
# A raw JSON object: a dict when decoded, tested first since the Mapping ABC's test costs several times more
# (these tests run on every admission request).
_JSON_OBJECT: Final = (dict, Mapping)


def cel_rules() -> list[dict[str, Any]]:
    """The `x-kubernetes-validations` on `spec` that say the same as `shape_errors`."""
    return [
        {
            "rule": f"has(self.{SINGLE_FIELD}) != has(self.{LIST_FIELD})",
            "message": SHAPE_DETAIL,
            "reason": "FieldValueRequired",
        },
        {
            "rule": f"!has(self.{SINGLE_FIELD}) || !has(self.{AUTOSCALING_FIELD})",
            "message": SINGLE_AUTOSCALING_DETAIL,
            "fieldPath": f".{AUTOSCALING_FIELD}",
            "reason": "FieldValueForbidden",
        },
    ]


def _present(spec: Mapping[str, Any], key: str) -> bool:
    # A JSON null counts as absent: the API server prunes it.
    return spec.get(key) is not None


def shape_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """What is wrong with the choice of shape (empty when one is chosen well). An object without a `spec`
    object is left to decoding, which names that problem."""
    spec = obj.get("spec")
    if not isinstance(spec, _JSON_OBJECT):
        return []
    single = _present(spec, SINGLE_FIELD)
    if single == _present(spec, LIST_FIELD):
        return [required("spec", SHAPE_DETAIL)]
    if single and _present(spec, AUTOSCALING_FIELD):
        return [forbidden(f"spec.{AUTOSCALING_FIELD}", SINGLE_AUTOSCALING_DETAIL)]
    return []


def is_single(spec: object) -> bool:
    return isinstance(spec, _JSON_OBJECT) and _present(spec, SINGLE_FIELD)


def backend_objects(spec: object) -> list[dict[str, Any]]:
    """Each backend object of a raw spec, whichever shape; malformed entries are skipped."""
    if not isinstance(spec, _JSON_OBJECT):
        return []
    single = spec.get(SINGLE_FIELD)
    if isinstance(single, dict):
        return [single]
    backends = spec.get(LIST_FIELD)
    return [backend for backend in backends if isinstance(backend, dict)] if isinstance(backends, list) else []


def wire_path(path: str) -> str:
    """A path of the internal list-of-one form, as the single-backend object spells it."""
    if path in (_LIST_PREFIX, _FIRST_PREFIX):
        return _SINGLE_PATH
    if path.startswith(_FIRST_PREFIX) and path[len(_FIRST_PREFIX)] in ".[":
        return _SINGLE_PATH + path[len(_FIRST_PREFIX) :]
    return path


def on_wire(errors: Iterable[FieldError], *, single: bool) -> list[FieldError]:
    """The errors with the paths the user wrote: unchanged for `spec.backends`, mapped for `spec.backend`."""
    if not single:
        return list(errors)
    return [
        replace(error, path=wire_path(error.path), reads=tuple(wire_path(path) for path in error.reads))
        for error in errors
    ]


def with_shape_hints(
    errors: Iterable[FieldError], *, list_only: Collection[str], single_only: Collection[str]
) -> list[FieldError]:
    """Decoding errors where a field of the other shape was refused as undeclared, saying where it belongs
    (a manifest of Kthena v0.2-v0.4 gives its `spec.backend` a `minReplicas`, say)."""
    return [_hinted(error, list_only=list_only, single_only=single_only) for error in errors]


def _hinted(error: FieldError, *, list_only: Collection[str], single_only: Collection[str]) -> FieldError:
    parent, _, name = error.path.rpartition(".")
    if error.type != "Forbidden":
        return error
    if parent == _SINGLE_PATH and name in list_only:
        hint = f"{name} is a field of spec.backends[] (several backends, autoscaling); a spec.backend runs a fixed "
        hint += "number of replicas"
    elif _LIST_ITEM.fullmatch(parent) and name in single_only:
        hint = f"{name} is a field of spec.backend (Kthena v1.0); a spec.backends[] entry has minReplicas and "
        hint += "maxReplicas"
    else:
        return error
    return replace(error, detail=f"{error.detail}; {hint}")
