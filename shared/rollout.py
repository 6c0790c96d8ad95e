"""Rollouts only by intent: the annotations by which a ModelServing's pod template is told apart from what the
current version of modelbooster would render, and by which a user asks for the current rendering
(docs/design/reconciler.md §16).

- `modelbooster.io/rollout` on a ModelBooster: any new value (the CLI's `modelbooster rollout` writes the time)
  asks for every ModelServing of it to be brought to the current rendering, the `kubectl rollout restart` of
  this product. A ModelServing that already runs the current rendering is left as it is: nothing restarts.
- `modelbooster.io/template` and `modelbooster.io/template-input` on a ModelServing (the reconciler's own): the
  digest of its pod-shaping spec (everything but `spec.replicas`) as the reconciler last wrote or took it over,
  and the digest of what that was rendered from (the backend as the user wrote it, and the rollout request).

The names are under the project's own prefix, like `modelbooster.io/external-replicas`: Kthena owns
`workload.serving.volcano.sh/` and may define annotations there.
"""

from __future__ import annotations

from typing import Final

ANNOTATION_ROLLOUT: Final = "modelbooster.io/rollout"
ANNOTATION_TEMPLATE: Final = "modelbooster.io/template"
ANNOTATION_TEMPLATE_INPUT: Final = "modelbooster.io/template-input"

# The backend fields that never shape a ModelServing's pod-shaping spec: its replica count (the ModelServing's
# `spec.replicas`, not held), what only the route and the autoscaling objects read. A change of one of them is
# not a reason to roll the pods; a test renders each change and checks that the pod-shaping spec is the same.
NOT_POD_SHAPING: Final = frozenset(
    {
        "minReplicas",
        "maxReplicas",
        "replicas",
        "routeWeight",
        "scalingCost",
        "scaleToZeroGracePeriod",
        "autoscalingPolicy",
    }
)
