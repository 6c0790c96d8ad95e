"""Labels of the children and of their pod templates, and the revision digest (docs/design/synthesis.md §3, §5).

The revision label is our own digest of one child's desired content, so it changes exactly when that
child's desired state does: a routeWeight change rewrites only the ModelRoute, never the ModelServing.
Pod templates never carry it; otherwise every child update would also roll the pods.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Collection
from typing import Any

from shared.constants import (
    LABEL_BACKEND_NAME,
    LABEL_MANAGED_BY,
    LABEL_MODEL_NAME,
    LABEL_MODEL_UID,
    LABEL_REGISTRY_MANAGED_BY,
    LABEL_REVISION,
    MANAGED_BY_VALUE,
    REGISTRY_MANAGED_BY_VALUE,
)

# 16 hex digits = 64 bits: collisions between two successive revisions of one object are not a concern.
REVISION_LENGTH = 16
_MARSHAL_FORMAT = 0


def child_labels(*, model: str, backend: str, uid: str) -> dict[str, str]:
    """Labels of a child; the revision is filled in by `stamp_revision` once the object is complete."""
    return {
        LABEL_MODEL_NAME: model,
        LABEL_BACKEND_NAME: backend,
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
        LABEL_REVISION: "",
        LABEL_MODEL_UID: uid,
        LABEL_REGISTRY_MANAGED_BY: REGISTRY_MANAGED_BY_VALUE,
    }


def pod_labels(*, model: str, backend: str, uid: str | None) -> dict[str, str]:
    """Labels of a pod template: the child's labels without the revision (and without the uid when None)."""
    labels = {LABEL_MODEL_NAME: model, LABEL_BACKEND_NAME: backend, LABEL_MANAGED_BY: MANAGED_BY_VALUE}
    if uid is not None:
        labels[LABEL_MODEL_UID] = uid
    labels[LABEL_REGISTRY_MANAGED_BY] = REGISTRY_MANAGED_BY_VALUE
    return labels


def revision_digest(obj: dict[str, Any], *, ignored_spec_fields: Collection[str] = ()) -> str:
    """Digest of a child's desired content: everything except its own revision label and the spec fields
    that belong to someone else (a ModelServing's `replicas` once an autoscaler drives it).

    The content is serialised with marshal format 0, Python's oldest and frozen format: it records values
    only (no object identity, unlike formats 3 and 4) and is several times faster than `json.dumps`, which
    matters because every reconcile digests every child. Map order counts; children are built in a fixed
    order, and the API server hands maps back with sorted keys.
    """
    metadata = dict(obj["metadata"])
    labels = dict(metadata.get("labels") or {})
    labels.pop(LABEL_REVISION, None)
    metadata["labels"] = labels
    spec = obj.get("spec")
    if ignored_spec_fields and isinstance(spec, dict):
        spec = {key: value for key, value in spec.items() if key not in ignored_spec_fields}
    content = {**obj, "metadata": metadata, "spec": spec}
    return hashlib.sha256(marshal.dumps(content, _MARSHAL_FORMAT)).hexdigest()[:REVISION_LENGTH]


def stamp_revision(obj: dict[str, Any], *, ignored_spec_fields: Collection[str] = ()) -> dict[str, Any]:
    """Set the revision label of a finished child, in place; returns the object for chaining."""
    obj["metadata"]["labels"][LABEL_REVISION] = revision_digest(obj, ignored_spec_fields=ignored_spec_fields)
    return obj
