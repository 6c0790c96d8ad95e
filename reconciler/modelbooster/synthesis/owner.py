"""Who owns a child, and the metadata every child carries (docs/design/synthesis.md §4)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from reconciler.modelbooster.synthesis.labels import child_labels
from shared.constants import KIND_MODEL_BOOSTER, WORKLOAD_API_VERSION

UNOWNED_PREFIX = "unowned-"
_UNOWNED_DIGITS = 16


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


def unowned_uid(namespace: str, name: str) -> str:
    """The stand-in for the uid in children rendered before the API server gave the ModelBooster one: the model's
    own (a shared one would let one model's ModelServer select another's pods), and known to the reconciler, which
    selects the pods of an adopted template still carrying it (docs/design/synthesis.md §1)."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()
    return UNOWNED_PREFIX + digest[:_UNOWNED_DIGITS]
