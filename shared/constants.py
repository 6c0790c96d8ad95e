"""API identity: groups, versions, kinds, plurals and label keys of every object we read or write."""

from __future__ import annotations

from typing import Final

WORKLOAD_GROUP: Final = "workload.serving.volcano.sh"
NETWORKING_GROUP: Final = "networking.serving.volcano.sh"
VERSION: Final = "v1alpha1"
WORKLOAD_API_VERSION: Final = f"{WORKLOAD_GROUP}/{VERSION}"
NETWORKING_API_VERSION: Final = f"{NETWORKING_GROUP}/{VERSION}"

KIND_MODEL_BOOSTER: Final = "ModelBooster"
KIND_MODEL_SERVING: Final = "ModelServing"
KIND_MODEL_SERVER: Final = "ModelServer"
KIND_MODEL_ROUTE: Final = "ModelRoute"
KIND_AUTOSCALING_POLICY: Final = "AutoscalingPolicy"
KIND_AUTOSCALING_POLICY_BINDING: Final = "AutoscalingPolicyBinding"

PLURAL_MODEL_BOOSTERS: Final = "modelboosters"
PLURAL_MODEL_SERVINGS: Final = "modelservings"
PLURAL_MODEL_SERVERS: Final = "modelservers"
PLURAL_MODEL_ROUTES: Final = "modelroutes"
PLURAL_AUTOSCALING_POLICIES: Final = "autoscalingpolicies"
PLURAL_AUTOSCALING_POLICY_BINDINGS: Final = "autoscalingpolicybindings"

# Labels written on every child and on the pod templates (docs/design/synthesis.md §3).
LABEL_MODEL_NAME: Final = f"{WORKLOAD_GROUP}/model-name"
LABEL_BACKEND_NAME: Final = f"{WORKLOAD_GROUP}/backend-name"
LABEL_MANAGED_BY: Final = f"{WORKLOAD_GROUP}/managed-by"
LABEL_REVISION: Final = f"{WORKLOAD_GROUP}/revision"
LABEL_MODEL_UID: Final = f"{WORKLOAD_GROUP}/model-uid"
MANAGED_BY_VALUE: Final = WORKLOAD_GROUP
# The label the product documentation promises, kept beside the one Kthena's code uses.
LABEL_REGISTRY_MANAGED_BY: Final = "registry.volcano.sh/managed-by"
REGISTRY_MANAGED_BY_VALUE: Final = "registry.volcano.sh"

# On every CRD we generate: the digest of its spec, by which the reconciler tells an outdated CRD.
ANNOTATION_CRD_DIGEST: Final = f"{WORKLOAD_GROUP}/crd-digest"

# Labels that Kthena's ModelServing controller puts on pods, which our children select on.
LABEL_MODELSERVING_NAME: Final = "modelserving.volcano.sh/name"
LABEL_MODELSERVING_GROUP_NAME: Final = "modelserving.volcano.sh/group-name"
LABEL_MODELSERVING_ROLE: Final = "modelserving.volcano.sh/role"

# Environment variables of a backend that change what we generate (docs/design/synthesis.md §6, §10).
ENV_RUNTIME_PORT: Final = "RUNTIME_PORT"
ENV_RUNTIME_URL: Final = "RUNTIME_URL"
ENV_RUNTIME_METRICS_PATH: Final = "RUNTIME_METRICS_PATH"
ENV_ALLOW_RUNTIME_LORA_UPDATING: Final = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"
DEFAULT_RUNTIME_PORT: Final = 8100
DEFAULT_RUNTIME_METRICS_PATH: Final = "/metrics"
DEFAULT_ENGINE_PORT: Final = 8000

# Condition types and reasons on ModelBooster status.
CONDITION_INITIALIZED: Final = "Initialized"
CONDITION_ACTIVE: Final = "Active"
CONDITION_FAILED: Final = "Failed"
# Whether every ModelServing runs the pod template this version renders (docs/design/reconciler.md §16).
CONDITION_UP_TO_DATE: Final = "UpToDate"

# Limits that the child CRDs impose and that we check at admission instead (docs/design/api.md §4).
MAX_REPLICAS: Final = 1_000_000
MAX_ROUTE_LORA_ADAPTERS: Final = 10
MAX_ROUTE_RULES: Final = 16
# A ModelRoute rule targets at most 16 ModelServers, and the default rule targets every backend.
MAX_BACKENDS: Final = 16
MAX_ROUTE_TARGETS: Final = 16
MAX_SCALE_TO_ZERO_GRACE_SECONDS: Final = 1800
DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
# Kubernetes' own spelling of the expression, which its message quotes.
DNS1123_SUBDOMAIN_REGEX: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
