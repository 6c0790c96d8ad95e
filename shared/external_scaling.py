"""The opt-in that lets something outside the ModelBooster set its backends' replicas (docs/design/inferno.md §13).

`modelbooster.io/external-replicas: "true"` on a ModelBooster means: each backend's replicas are set from
outside — by the Inferno controller's Scale actuation, KEDA, or an HPA — between its `minReplicas` and
`maxReplicas`. Then:
- admission accepts `minReplicas < maxReplicas` on a backend without any autoscaling policy (otherwise the
  two must be equal: nothing could move the count between them);
- the reconciler creates each ModelServing at `minReplicas` and never writes its `spec.replicas` again (the
  same rule as for an autoscaled backend, docs/design/reconciler.md §7);
- no AutoscalingPolicy or binding is made for it;
- it may not be set beside an autoscaling policy (model-level, a backend's own, or a single backend's
  `spec.autoscalingPolicy`): Kthena's autoscaler would then write the same replicas through the policy, and the
  two scalers would fight over them. Admission refuses the pair, naming both ways out.

The name is under the project's own prefix, not Kthena's `workload.serving.volcano.sh/`: Kthena owns that
prefix and may define annotations there, and its API is left untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

ANNOTATION_EXTERNAL_REPLICAS: Final = "modelbooster.io/external-replicas"
# Kubernetes annotations are strings: these are the values that switch it on and off; anything else is refused
# at admission so a typo ("ture", "yes") does not silently leave the backends fixed.
ENABLED_VALUE: Final = "true"
DISABLED_VALUE: Final = "false"
ACCEPTED_VALUES: Final = (ENABLED_VALUE, DISABLED_VALUE)

NO_AUTOSCALING_DETAIL: Final = (
    "minReplicas and maxReplicas must be equal when no autoscaling is set; to let replicas move between them, "
    f"set autoscalingPolicy, or annotate the ModelBooster {ANNOTATION_EXTERNAL_REPLICAS}: \"true\" so they are "
    "set from outside (Inferno, KEDA or an HPA)"
)


EXTERNAL_WITH_POLICY_DETAIL: Final = (
    f'"{ENABLED_VALUE}" may not be set beside an autoscaling policy: both would set the replicas (Kthena\'s '
    "autoscaler through the policy, and Inferno, KEDA or an HPA through /scale) and fight over them; remove the "
    f"annotation {ANNOTATION_EXTERNAL_REPLICAS} to let the policy scale the backends, or remove the autoscaling "
    "policy (spec.autoscalingPolicy, or each backend's own) to let the external scaler set the replicas"
)


def replicas_set_externally(annotations: Mapping[str, str] | None) -> bool:
    """Whether the ModelBooster with these annotations has opted in."""
    return bool(annotations) and (annotations or {}).get(ANNOTATION_EXTERNAL_REPLICAS) == ENABLED_VALUE
