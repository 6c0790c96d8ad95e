"""Who owns a child, and the metadata every child carries (docs/design/synthesis.md §4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.modelbooster.synthesis.labels import child_labels
from shared.constants import KIND_MODEL_BOOSTER, WORKLOAD_API_VERSION


@dataclass(frozen=True)
class Owner:
    """The ModelBooster's identity as its children see it."""

    name: str
    namespace: str
    uid: str


def owner_reference(owner: Owner) -> dict[str, Any]:
    # controller + blockOwnerDeletion on every kind (the reference omitted them on ModelServing and
    # ModelRoute), so foreground deletion waits for all children and adoption conflicts are visible.
    return {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": KIND_MODEL_BOOSTER,
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_metadata(*, owner: Owner, name: str, backend: str) -> dict[str, Any]:
    """`backend` is the backend's name, or "" for the ModelRoute and model-level autoscaling objects."""
    return {
        "name": name,
        "namespace": owner.namespace,
        "labels": child_labels(model=owner.name, backend=backend, uid=owner.uid),
        "ownerReferences": [owner_reference(owner)],
    }
