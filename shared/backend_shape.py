"""The ways a ModelBooster names its backends (`spec.backends`; `spec.backend` with a range or with `replicas`)
and the rules about choosing one (docs/design/api.md §8). They live here once, for the webhook's check (on the
raw object, before decoding: which schema applies depends on the answer) and for the CRD's CEL rules, with the
same messages. Internally a single backend is a list of one; this module maps what that path reports
(`spec.backends[0]...`) back to the field the user wrote (`spec.backend...`, `spec.autoscalingPolicy...`).
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
# The replica fields of a single backend: Kthena v1.0's count, or Kthena v0.2-v0.4's range.
COUNT_FIELD: Final = "replicas"
MIN_FIELD: Final = "minReplicas"
MAX_FIELD: Final = "maxReplicas"
REPLICA_FIELDS: Final = (COUNT_FIELD, MIN_FIELD, MAX_FIELD)

# The generations, as messages and docs name them.
LIST_GENERATION: Final = "Kthena v0.1.0"
RANGE_GENERATION: Final = "Kthena v0.2-v0.4"
COUNT_GENERATION: Final = "Kthena v1.0"

NEITHER_DETAIL: Final = (
    f"must specify one of spec.backend (one backend, as Kthena v0.2 and later write it) or spec.backends "
    f"(a list of backends, as {LIST_GENERATION} writes it)"
)
BOTH_DETAIL: Final = (
    "may not be set together with spec.backend: keep spec.backend for one backend, or spec.backends for a list "
    "of backends, and remove the other"
)
NO_REPLICAS_DETAIL: Final = (
    f"must specify replicas (a fixed count, as {COUNT_GENERATION} writes it) or minReplicas and maxReplicas "
    f"(a range, as {RANGE_GENERATION} write it; needed with spec.autoscalingPolicy)"
)
COUNT_AND_RANGE_DETAIL: Final = (
    f"may not be set together with minReplicas or maxReplicas: replicas is {COUNT_GENERATION}'s fixed count, "
    f"minReplicas and maxReplicas are {RANGE_GENERATION}'s range; keep one"
)
HALF_RANGE_DETAIL: Final = (
    "{given} is set, so this backend is read as " + RANGE_GENERATION + "'s, which needs {missing} too "
    "(or write replicas alone, a fixed count as " + COUNT_GENERATION + " does)"
)
COUNT_AUTOSCALING_DETAIL: Final = (
    f"a spec.backend with replicas ({COUNT_GENERATION}) has no autoscaling: it runs spec.backend.replicas replicas; "
    f"to autoscale it, replace replicas with minReplicas and maxReplicas (as {RANGE_GENERATION} write it)"
)

_LIST_PREFIX: Final = f"spec.{LIST_FIELD}"
_FIRST_PREFIX: Final = f"{_LIST_PREFIX}[0]"
_FIRST_POLICY: Final = f"{_FIRST_PREFIX}.{AUTOSCALING_FIELD}"
_SINGLE_PATH: Final = f"spec.{SINGLE_FIELD}"
_SPEC_POLICY: Final = f"spec.{AUTOSCALING_FIELD}"
_LIST_ITEM: Final = re.compile(r"spec\.backends\[\d+\]")
# A raw JSON object: a dict when decoded, tested first since the Mapping ABC's test costs several times more
# (these tests run on every admission request).
_JSON_OBJECT: Final = (dict, Mapping)


def cel_rules() -> list[dict[str, Any]]:
    """The `x-kubernetes-validations` on `spec` that say the same as `shape_errors` and `autoscaling_errors`."""
    single, listed, policy = SINGLE_FIELD, LIST_FIELD, AUTOSCALING_FIELD
    return [
        {"rule": f"has(self.{single}) || has(self.{listed})", "message": NEITHER_DETAIL,
         "reason": "FieldValueRequired"},
        {"rule": f"!has(self.{single}) || !has(self.{listed})", "message": BOTH_DETAIL,
         "fieldPath": f".{listed}", "reason": "FieldValueForbidden"},
        {"rule": f"!has(self.{policy}) || !has(self.{single}) || !has(self.{single}.{COUNT_FIELD})",
         "message": COUNT_AUTOSCALING_DETAIL, "fieldPath": f".{policy}", "reason": "FieldValueForbidden"},
    ]  # fmt: skip


def single_backend_cel_rules() -> list[dict[str, Any]]:
    """The `x-kubernetes-validations` on `spec.backend` that say the same as `shape_errors` about its replicas."""
    count, low, high = COUNT_FIELD, MIN_FIELD, MAX_FIELD
    return [
        {"rule": f"has(self.{count}) || has(self.{low}) || has(self.{high})", "message": NO_REPLICAS_DETAIL,
         "reason": "FieldValueRequired"},
        {"rule": f"!has(self.{count}) || (!has(self.{low}) && !has(self.{high}))",
         "message": COUNT_AND_RANGE_DETAIL, "fieldPath": f".{count}", "reason": "FieldValueForbidden"},
        {"rule": f"has(self.{count}) || !has(self.{low}) || has(self.{high})",
         "message": HALF_RANGE_DETAIL.format(given=low, missing=high), "fieldPath": f".{high}",
         "reason": "FieldValueRequired"},
        {"rule": f"has(self.{count}) || !has(self.{high}) || has(self.{low})",
         "message": HALF_RANGE_DETAIL.format(given=high, missing=low), "fieldPath": f".{low}",
         "reason": "FieldValueRequired"},
    ]  # fmt: skip


def _present(holder: Mapping[str, Any], key: str) -> bool:
    # A JSON null counts as absent: the API server prunes it.
    return holder.get(key) is not None


def shape_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """What is wrong with the choice of shape, when it leaves open how the object is to be read (empty when it
    does not): neither or both of `spec.backend` and `spec.backends`, or a `spec.backend` whose replica fields
    name no generation or two. An object without a `spec` object is left to decoding, which names that problem.
    """
    spec = obj.get("spec")
    if not isinstance(spec, _JSON_OBJECT):
        return []
    single = _present(spec, SINGLE_FIELD)
    listed = _present(spec, LIST_FIELD)
    if not single and not listed:
        return [required("spec", NEITHER_DETAIL)]
    if single and listed:
        return [forbidden(_LIST_PREFIX, BOTH_DETAIL)]
    backend = spec[SINGLE_FIELD] if single else None
    if not isinstance(backend, _JSON_OBJECT):
        return []  # a list, or a single backend that is not an object: decoding says what is wrong
    present = (_present(backend, key) for key in (COUNT_FIELD, MIN_FIELD, MAX_FIELD))
    return replica_form_errors(*present)


def replica_form_errors(count: bool, low: bool, high: bool, /) -> list[FieldError]:
    """What is wrong with the replica fields a single backend sets (`replicas`, `minReplicas`, `maxReplicas`)."""
    if count:
        return [forbidden(f"{_SINGLE_PATH}.{COUNT_FIELD}", COUNT_AND_RANGE_DETAIL)] if low or high else []
    if not low and not high:
        return [required(_SINGLE_PATH, NO_REPLICAS_DETAIL)]
    if low != high:
        given, missing = (MIN_FIELD, MAX_FIELD) if low else (MAX_FIELD, MIN_FIELD)
        return [required(f"{_SINGLE_PATH}.{missing}", HALF_RANGE_DETAIL.format(given=given, missing=missing))]
    return []


def autoscaling_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """`spec.autoscalingPolicy` beside a Kthena v1.0 backend (`replicas`), which does not autoscale. Unlike
    `shape_errors`, it leaves no doubt how the object is read: reported with every other error of the object."""
    spec = obj.get("spec")
    if not isinstance(spec, _JSON_OBJECT) or not _present(spec, AUTOSCALING_FIELD):
        return []
    backend = spec.get(SINGLE_FIELD)
    if not isinstance(backend, _JSON_OBJECT) or not _present(backend, COUNT_FIELD):
        return []
    error = forbidden(_SPEC_POLICY, COUNT_AUTOSCALING_DETAIL)
    return [replace(error, reads=(_SPEC_POLICY, f"{_SINGLE_PATH}.{COUNT_FIELD}"))]


def is_single(spec: object) -> bool:
    return isinstance(spec, _JSON_OBJECT) and _present(spec, SINGLE_FIELD)


def list_autoscaling(spec: object) -> bool:
    """Whether `spec.autoscalingPolicy` is model-level autoscaling over a list of backends (Kthena v0.1.0's
    optimizer, with its own defaults), rather than the one backend's policy of Kthena v0.2-v0.4."""
    return isinstance(spec, _JSON_OBJECT) and _present(spec, AUTOSCALING_FIELD) and not is_single(spec)


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
    """A path of the internal list-of-one form, as the single-backend object spells it: the backend's fields
    under `spec.backend`, its autoscaling policy (Kthena v0.2-v0.4's model-level one) under `spec`."""
    if path in (_LIST_PREFIX, _FIRST_PREFIX):
        return _SINGLE_PATH
    if not path.startswith(_FIRST_PREFIX) or path[len(_FIRST_PREFIX)] not in ".[":
        return path
    if path.startswith(_FIRST_POLICY) and path[len(_FIRST_POLICY) : len(_FIRST_POLICY) + 1] in ("", ".", "["):
        return _SPEC_POLICY + path[len(_FIRST_POLICY) :]
    return _SINGLE_PATH + path[len(_FIRST_PREFIX) :]


def on_wire(
    errors: Iterable[FieldError], *, single: bool, wording: Mapping[str, str] | None = None
) -> list[FieldError]:
    """The errors with the paths the user wrote: unchanged for `spec.backends`, mapped for `spec.backend`, where
    a detail found in `wording` is replaced by its text for a single backend."""
    if not single:
        return list(errors)
    words = wording or {}
    return [
        replace(
            error,
            path=wire_path(error.path),
            reads=tuple(dict.fromkeys(wire_path(path) for path in error.reads)),
            detail=words.get(error.detail, error.detail),
        )
        for error in errors
    ]


def with_shape_hints(
    errors: Iterable[FieldError], *, list_only: Collection[str], single_only: Collection[str]
) -> list[FieldError]:
    """Decoding errors where a field of another shape was refused as undeclared, saying where it belongs
    (a manifest of Kthena v0.1.0 gives its `spec.backend` a `routeWeight`, say)."""
    return [_hinted(error, list_only=list_only, single_only=single_only) for error in errors]


def _hinted(error: FieldError, *, list_only: Collection[str], single_only: Collection[str]) -> FieldError:
    parent, _, name = error.path.rpartition(".")
    if error.type != "Forbidden":
        return error
    if parent == _SINGLE_PATH and name == AUTOSCALING_FIELD:
        hint = "a single backend autoscales with spec.autoscalingPolicy and its minReplicas and maxReplicas "
        hint += f"(as {RANGE_GENERATION} write it)"
    elif parent == _SINGLE_PATH and name in list_only:
        hint = f"{name} is a field of spec.backends[] ({LIST_GENERATION}: several backends); a spec.backend has none"
    elif _LIST_ITEM.fullmatch(parent) and name in single_only:
        hint = f"{name} is a field of spec.backend ({COUNT_GENERATION}); a spec.backends[] entry has minReplicas and "
        hint += "maxReplicas"
    else:
        return error
    return replace(error, detail=f"{error.detail}; {hint}")
