"""Every rule group, in the order its errors are reported (docs/design/validation.md §1): the reference's
rules (§4), the unsupported features (§5), the additional rules (§6). Lazily, so that an object with tens of
thousands of mistakes stops costing at the collection limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import chain, islice
from typing import Any

from shared.api.modelbooster import ModelBooster
from shared.backend_shape import on_wire
from shared.errors import FieldError
from shared.validation.autoscaling import (
    SINGLE_WORDING,
    autoscaling_scope,
    external_replicas,
    grace_periods,
    replica_bounds,
)
from shared.validation.backends import backend_types, duplicates, engine_ports, env_quantities, kv_connectors
from shared.validation.model_uris import cache_uris
from shared.validation.names import (
    generated_names,
    lora_names,
    object_name,
    object_name_fits,
    route_limits,
    route_model_name_clashes,
)
from shared.validation.unsupported_features import unsupported_features
from shared.validation.workers import (
    container_resources,
    pd_worker_counts,
    worker_configs,
    worker_images,
    worker_types,
)


def rule_errors(model: ModelBooster, raw: Mapping[str, Any], *, limit: int) -> list[FieldError]:
    """Every rule's errors on a decoded object, at the paths the user wrote (the first `limit` of them).

    The rules read the single backend of `spec.backend` as the list of one it decodes to; `on_wire` reports
    its errors at `spec.backend...`.
    """
    found = chain(
        env_quantities(model.spec.backends),
        _reference_rules(model),
        unsupported_features(raw),
        _additional_rules(model),
    )
    errors = list(islice(found, max(limit, 0)))
    return on_wire(errors, single=model.spec.backend is not None, wording=SINGLE_WORDING)


def _reference_rules(model: ModelBooster) -> Iterator[FieldError]:
    """The reference's rules, in its order."""
    backends = model.spec.backends
    yield from grace_periods(backends)
    yield from replica_bounds(backends)
    yield from worker_images(backends)
    yield from autoscaling_scope(model)
    yield from worker_types(backends)
    yield from lora_names(model.metadata.name or "", backends)


def _additional_rules(model: ModelBooster) -> Iterator[FieldError]:
    """What would otherwise fail later, in the reconciler or a child's API. A rule that reads what an earlier
    one refused (a worker's config, the prefill/decode pair, the object's name) skips that backend or object:
    one error says the cause."""
    name = model.metadata.name or ""
    yield from object_name(name)
    yield from external_replicas(model)
    backends = model.spec.backends
    yield from backend_types(backends)
    pd_counts_ok = [True] * len(backends)
    for i, backend in enumerate(backends):
        error = pd_worker_counts(i, backend)
        if error is not None:
            pd_counts_ok[i] = False
            yield error
    configs_ok = [True] * len(backends)
    for i, backend in enumerate(backends):
        for error in worker_configs(i, backend):
            configs_ok[i] = False
            yield error
    yield from engine_ports(backends, configs_ok=configs_ok)
    yield from cache_uris(backends)
    yield from kv_connectors(backends, readable=[c and p for c, p in zip(configs_ok, pd_counts_ok, strict=True)])
    if object_name_fits(name):  # else the names made of it are wrong for the same reason, said once
        yield from generated_names(name, backends)
    yield from route_model_name_clashes(model)
    yield from route_limits(backends)
    yield from duplicates(backends)
    yield from container_resources(backends)
