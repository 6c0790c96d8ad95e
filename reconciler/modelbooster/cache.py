"""What the ModelBooster controller's informers keep of each object (their transforms).

The caches hold every ModelBooster and every child for as long as the process runs, so they keep, as plain
values, only what is read on every event or status computation, and pack the rest (reconciler/runtime/lean.py):

- a child: its identity and resourceVersion, labels (the model-uid index, the revision digest), owner
  references (event mapping, control checks), deletionTimestamp, and the status fields the conditions read
  (ModelServing `status.conditions` and `status.replicas`). Its spec is packed: only the comparison with the
  desired child reads it, through `full_object`. Of managedFields only the one bit the apply rules need stays
  and what other managers own in `spec`, for the foreign-field check (runtime/apply.py
  `managed_fields_pruner`), packed too.
- a ModelBooster: metadata and status plain (event handlers and the condition gauge read them); the spec is
  packed: a reconcile reads the whole object through `full_object`. managedFields and kubectl's
  last-applied-configuration annotation (a second copy of the whole object) are dropped: nothing reads them.
"""

from __future__ import annotations

from typing import Any, Final

from reconciler.runtime.apply import managed_fields_pruner
from reconciler.runtime.informer import Transform
from reconciler.runtime.lean import Keep, lean
from reconciler.runtime.objects import without_managed_fields

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
# Read by no reconcile, and often as large as the spec itself.
_UNREAD_ANNOTATIONS: Final = frozenset({LAST_APPLIED})

CHILD_KEEP: Final[Keep] = {
    "apiVersion": None,
    "kind": None,
    "metadata": {
        "name": None,
        "namespace": None,
        "uid": None,
        "resourceVersion": None,
        "labels": None,
        "ownerReferences": None,
        "deletionTimestamp": None,
    },
    "status": {"conditions": None, "replicas": None},
}

BOOSTER_KEEP: Final[Keep] = {"apiVersion": None, "kind": None, "metadata": None, "status": None}


def booster_transform(obj: dict[str, Any]) -> dict[str, Any]:
    return lean(without_managed_fields(obj, annotations=_UNREAD_ANNOTATIONS), BOOSTER_KEEP)


def child_transform(*, field_manager: str) -> Transform:
    prune = managed_fields_pruner(manager=field_manager)

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        return lean(prune(obj), CHILD_KEEP)

    return transform
