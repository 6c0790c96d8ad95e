"""The kinds of our API groups (workload.serving.volcano.sh, networking.serving.volcano.sh, inferno.platform.ai)."""

from __future__ import annotations

from typing import Final

from reconciler.runtime.kinds import Kind
from shared import constants as c
from shared.api import inferno as api

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

ACCELERATOR: Final = Kind(api.GROUP, api.VERSION, api.KIND_ACCELERATOR, api.PLURAL_ACCELERATORS)
MODEL: Final = Kind(api.GROUP, api.VERSION, api.KIND_MODEL, api.PLURAL_MODELS)
SERVICE_CLASS: Final = Kind(api.GROUP, api.VERSION, api.KIND_SERVICE_CLASS, api.PLURAL_SERVICE_CLASSES)
SERVER: Final = Kind(api.GROUP, api.VERSION, api.KIND_SERVER, api.PLURAL_SERVERS)
CAPACITY: Final = Kind(api.GROUP, api.VERSION, api.KIND_CAPACITY, api.PLURAL_CAPACITIES)
OPTIMIZER: Final = Kind(api.GROUP, api.VERSION, api.KIND_OPTIMIZER, api.PLURAL_OPTIMIZERS)
# What an Optimizer run reads, and every Inferno kind.
INFERNO_INPUT_KINDS: Final = (ACCELERATOR, MODEL, SERVICE_CLASS, SERVER, CAPACITY)
INFERNO_KINDS: Final = (*INFERNO_INPUT_KINDS, OPTIMIZER)

# The API groups of the CRDs we ship: their CRDs are held whole (schemas, annotations) by CRD discovery.
OUR_GROUPS: Final = frozenset({c.WORKLOAD_GROUP, c.NETWORKING_GROUP, api.GROUP})
