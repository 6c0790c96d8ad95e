"""What the ModelBooster controller's informers keep of each object (docs/design/reconciler.md §13): the caches
hold every ModelBooster and child for the life of the process, so only what event handlers and status read stays
plain; the rest is packed (reconciler/runtime/lean.py) or dropped.
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
