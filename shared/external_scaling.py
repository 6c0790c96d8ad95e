"""The opt-in that lets something outside the ModelBooster set its backends' replicas (docs/design/inferno.md §13).

`modelbooster.io/external-replicas: "true"` on a ModelBooster means: each backend's replicas are set from
outside — by the Inferno controller's Scale actuation, KEDA, or an HPA — between its `minReplicas` and
`maxReplicas`. Then:
- admission accepts `minReplicas < maxReplicas` on a backend without any autoscaling policy (otherwise the
  two must be equal: nothing could move the count between them);
- the reconciler creates each ModelServing at `minReplicas` and never writes its `spec.replicas` again (the
  same rule as for an autoscaled backend, docs/design/reconciler.md §7);
- no AutoscalingPolicy or binding is made for it.

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


def replicas_set_externally(annotations: Mapping[str, str] | None) -> bool:
    """Whether the ModelBooster with these annotations has opted in."""
    return bool(annotations) and (annotations or {}).get(ANNOTATION_EXTERNAL_REPLICAS) == ENABLED_VALUE
