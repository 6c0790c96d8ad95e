"""The one ModelRoute of a ModelBooster (docs/design/synthesis.md §12).

The model name clients send is `spec.name`, else `metadata.name`. One backend (either shape): a single
`default` rule with the user's modelMatch. Several: a `default` rule matching that model name in the request
body across all backends (weighted by routeWeight), then one rule per LoRA adapter, in name order, targeting
the backends that load it.
"""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.synthesis.labels import stamp_revision
from reconciler.modelbooster.synthesis.owner import Owner, child_metadata
from shared.api.modelbooster import ModelBooster, ModelMatch
from shared.constants import KIND_MODEL_ROUTE, NETWORKING_API_VERSION
from shared.naming import backend_resource_name, route_name


def _target(owner: Owner, backend_name: str, weight: int | None) -> dict[str, Any]:
    target: dict[str, Any] = {"modelServerName": backend_resource_name(owner.name, backend_name)}
    if weight is not None:
        target["weight"] = weight
    return target


def _match_model(match: ModelMatch | None, model: str) -> dict[str, Any]:
    """The user's match with `body.model` set to this model or adapter name (overriding theirs)."""
    wire = match.to_wire() if match is not None else {}
    wire["body"] = {**wire.get("body", {}), "model": model}
    return wire


def _rules(booster: ModelBooster, owner: Owner) -> list[dict[str, Any]]:
    backends = booster.spec.backends
    match = booster.spec.model_match
    if len(backends) == 1:
        rule: dict[str, Any] = {"name": "default"}
        if match is not None:
            rule["modelMatch"] = match.to_wire()
        rule["targetModels"] = [_target(owner, backends[0].name, backends[0].route_weight)]
        return [rule]
    rules = [
        {
            "name": "default",
            "modelMatch": _match_model(match, booster.spec.route_model_name(owner.name)),
            "targetModels": [_target(owner, backend.name, backend.route_weight) for backend in backends],
        }
    ]
    for lora in lora_names(booster):
        carriers = [b for b in backends if any(a.name == lora for a in b.lora_adapters or ())]
        rules.append(
            {
                "name": lora,
                "modelMatch": _match_model(match, lora),
                "targetModels": [_target(owner, backend.name, backend.route_weight) for backend in carriers],
            }
        )
    return rules


def lora_names(booster: ModelBooster) -> list[str]:
    """Every adapter name across the backends, sorted and de-duplicated."""
    return sorted({lora.name for backend in booster.spec.backends for lora in backend.lora_adapters or ()})


def model_route(booster: ModelBooster, owner: Owner) -> dict[str, Any]:
    spec: dict[str, Any] = {"modelName": booster.spec.route_model_name(owner.name)}
    loras = lora_names(booster)
    if loras:
        spec["loraAdapters"] = loras
    spec["rules"] = _rules(booster, owner)
    obj = {
        "apiVersion": NETWORKING_API_VERSION,
        "kind": KIND_MODEL_ROUTE,
        "metadata": child_metadata(owner=owner, name=route_name(owner.name), backend=""),
        "spec": spec,
    }
    return stamp_revision(obj)
