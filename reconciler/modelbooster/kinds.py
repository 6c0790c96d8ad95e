"""The kinds the ModelBooster controller reads and writes (declared once in reconciler/api/kinds.py), and what
this controller knows of them: which fields are immutable, which kind an object is."""

from __future__ import annotations

from typing import Any, Final

from reconciler.api.kinds import (
    AUTOSCALING_POLICY,
    AUTOSCALING_POLICY_BINDING,
    CHILD_KINDS,
    MODEL_BOOSTER,
    MODEL_ROUTE,
    MODEL_SERVER,
    MODEL_SERVING,
)
from reconciler.runtime.kinds import Kind

__all__ = [
    "AUTOSCALING_POLICY",
    "AUTOSCALING_POLICY_BINDING",
    "CHILD_KINDS",
    "IMMUTABLE_FIELDS",
    "MODEL_BOOSTER",
    "MODEL_ROUTE",
    "MODEL_SERVER",
    "MODEL_SERVING",
    "child_kind_of",
]

# Fields of a child that its CRD makes immutable and a ModelBooster change can alter: the child is replaced
# (docs/design/reconciler.md §3). A ModelServing's gangPolicy.minRoleReplicas is immutable too, but a change
# of it is refused at admission instead, as replacing a ModelServing restarts all of its pods.
IMMUTABLE_FIELDS: Final[dict[Kind, tuple[tuple[str, ...], ...]]] = {MODEL_ROUTE: (("spec", "modelName"),)}


def child_kind_of(obj: dict[str, Any]) -> Kind | None:
    """The child kind an object (e.g. from synthesis) belongs to, or None if it is not one of ours."""
    for kind in CHILD_KINDS:
        if kind.matches(obj):
            return kind
    return None
