"""The engine containers' commands (docs/design/synthesis.md §9, Q13, Q14): what synthesis knows about a backend
put in the engine's terms (`shared.engines.engine.Launch`); the engine builds the argv."""

from __future__ import annotations

import math

from reconciler.modelbooster.synthesis.backend import BackendPlan
from shared.api.modelbooster import ModelWorker
from shared.engine_config import served_model_name
from shared.engines.engine import Launch
from shared.quantity import quantity_value

DEVICE_RESOURCES = ("nvidia.com/gpu", "huawei.com/ascend-1980")


def device_count(worker: ModelWorker) -> int:
    """Accelerators per pod: limits, or requests where limits do not name the device; rounded up."""
    resources = worker.resources
    limits = (resources.limits if resources else None) or {}
    requests = (resources.requests if resources else None) or {}
    total = 0
    for name in DEVICE_RESOURCES:
        amount = limits.get(name, requests.get(name))
        if amount is not None:
            total += math.ceil(quantity_value(amount))
    return total


def launch(plan: BackendPlan, *, worker: ModelWorker, config: dict[str, object] | None, pods: int = 1) -> Launch:
    """`pods`: how many pods one instance of this worker spans (the server worker's `pods`; roles: 1)."""
    return Launch(
        model_path=plan.model_path,
        config=config,
        port=plan.engine_port,
        served_name=served_model_name(plan.owner.name, plan.backend.workers),
        loras=tuple((lora.name, lora.output_dir) for lora in plan.loras),
        pods=pods,
        devices=device_count(worker),
    )
