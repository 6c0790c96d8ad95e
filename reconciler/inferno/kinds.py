"""The kinds the Inferno controller reads and writes: ours are declared once in reconciler/api/kinds.py; the
built-in workload kinds are those a Server's `targetRef` may name without an `apiVersion`
(reconciler.inferno.targets); HorizontalPodAutoscalers and KEDA's ScaledObjects are read to keep off targets
another scaler drives (reconciler.inferno.rivals).
"""

from __future__ import annotations

from typing import Final

from reconciler.api.kinds import (
    ACCELERATOR,
    AUTOSCALING_POLICY_BINDING,
    CAPACITY,
    INFERNO_INPUT_KINDS,
    INFERNO_KINDS,
    MODEL,
    MODEL_BOOSTER,
    MODEL_SERVER,
    MODEL_SERVING,
    OPTIMIZER,
    SERVER,
    SERVICE_CLASS,
)
from reconciler.runtime.kinds import Kind

__all__ = [
    "ACCELERATOR",
    "AUTOSCALING_POLICY_BINDING",
    "CAPACITY",
    "DEPLOYMENT",
    "HORIZONTAL_POD_AUTOSCALER",
    "INFERNO_INPUT_KINDS",
    "INFERNO_KINDS",
    "MODEL",
    "MODEL_BOOSTER",
    "MODEL_SERVER",
    "MODEL_SERVING",
    "OPTIMIZER",
    "REPLICA_SET",
    "SCALED_OBJECT",
    "SERVER",
    "SERVICE_CLASS",
    "STATEFUL_SET",
]

# Scale actuation's targets (their `/scale`), besides ModelServing.
DEPLOYMENT: Final = Kind("apps", "v1", "Deployment", "deployments")
STATEFUL_SET: Final = Kind("apps", "v1", "StatefulSet", "statefulsets")
REPLICA_SET: Final = Kind("apps", "v1", "ReplicaSet", "replicasets")

# Other scalers of a target, which Scale actuation keeps off (reconciler.inferno.rivals).
HORIZONTAL_POD_AUTOSCALER: Final = Kind("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers")
SCALED_OBJECT: Final = Kind("keda.sh", "v1alpha1", "ScaledObject", "scaledobjects")
