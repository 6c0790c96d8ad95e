"""The kinds the ModelBooster controller reads and writes: the ModelBooster itself and every child kind."""

from __future__ import annotations

from typing import Any, Final

from reconciler.runtime.kinds import Kind
from shared import constants as c

MODEL_BOOSTER: Final = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_MODEL_BOOSTER, c.PLURAL_MODEL_BOOSTERS)
MODEL_SERVING: Final = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_MODEL_SERVING, c.PLURAL_MODEL_SERVINGS)
MODEL_SERVER: Final = Kind(c.NETWORKING_GROUP, c.VERSION, c.KIND_MODEL_SERVER, c.PLURAL_MODEL_SERVERS)
MODEL_ROUTE: Final = Kind(c.NETWORKING_GROUP, c.VERSION, c.KIND_MODEL_ROUTE, c.PLURAL_MODEL_ROUTES)
AUTOSCALING_POLICY: Final = Kind(c.WORKLOAD_GROUP, c.VERSION, c.KIND_AUTOSCALING_POLICY, c.PLURAL_AUTOSCALING_POLICIES)
AUTOSCALING_POLICY_BINDING: Final = Kind(
    c.WORKLOAD_GROUP, c.VERSION, c.KIND_AUTOSCALING_POLICY_BINDING, c.PLURAL_AUTOSCALING_POLICY_BINDINGS
)
# Every kind a ModelBooster owns, in the order they are created (docs/design/synthesis.md §1).
CHILD_KINDS: Final = (MODEL_SERVING, MODEL_SERVER, MODEL_ROUTE, AUTOSCALING_POLICY, AUTOSCALING_POLICY_BINDING)
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
