"""Defaulting of a ModelBooster (docs/design/api.md §6): the mutating webhook's job, also done by the reconciler
and CLI.

Works on the raw JSON object, not the decoded model, so that fields we do not model (and anything a newer
client sends) survive untouched and the webhook can diff before/after into a JSON Patch. Whatever is too
malformed to default (say, `backends` that is not a list) is left as it is, for validation to report.
Defaulting is deterministic and idempotent: defaulting a defaulted object changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.api.modelbooster import (
    DEFAULT_COST_EXPANSION_RATE_PERCENT,
    DEFAULT_ROUTE_WEIGHT,
    DEFAULT_SCALE_TO_ZERO_GRACE_PERIOD,
    DEFAULT_SINGLE_BACKEND_SCHEDULER,
    DEFAULT_TOLERANCE_PERCENT,
    DEFAULT_WORKER_PODS,
    DEFAULT_WORKER_REPLICAS,
    DEFAULT_WORKER_TYPE,
)


@dataclass
class Defaulted:
    """A defaulted deep copy of the object, and notes for the user (admission warnings)."""

    obj: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def apply_defaults(obj: Mapping[str, Any]) -> Defaulted:
    result = Defaulted(obj=_copy(obj))
    spec = result.obj.get("spec")
    if not isinstance(spec, dict):
        return result
    model_level = spec.get("autoscalingPolicy") is not None
    _default_policy(spec.get("autoscalingPolicy"))
    if model_level:
        _set_absent(spec, "costExpansionRatePercent", DEFAULT_COST_EXPANSION_RATE_PERCENT)
    backends = spec.get("backends")
    if isinstance(backends, list):
        for index, backend in enumerate(backends):
            if isinstance(backend, dict):
                _default_backend(backend, path=f"spec.backends[{index}]", model_level=model_level, into=result)
    single = spec.get("backend")
    if isinstance(single, dict):
        # Kthena v1.0's backend: its scheduler and its workers (docs/design/api.md §8).
        _set_absent(single, "schedulerName", DEFAULT_SINGLE_BACKEND_SCHEDULER)
        _default_workers(single, path="spec.backend", into=result)
    return result


def _default_backend(backend: dict[str, Any], *, path: str, model_level: bool, into: Defaulted) -> None:
    _set_absent(backend, "routeWeight", DEFAULT_ROUTE_WEIGHT)
    if model_level:
        _set_absent(backend, "scaleToZeroGracePeriod", DEFAULT_SCALE_TO_ZERO_GRACE_PERIOD)
    _default_policy(backend.get("autoscalingPolicy"))
    _default_workers(backend, path=path, into=into)


def _default_workers(backend: dict[str, Any], *, path: str, into: Defaulted) -> None:
    workers = backend.get("workers")
    if not isinstance(workers, list):
        return
    for index, worker in enumerate(workers):
        if isinstance(worker, dict):
            _default_worker(worker, path=f"{path}.workers[{index}]", into=into)


def _default_worker(worker: dict[str, Any], *, path: str, into: Defaulted) -> None:
    _set_absent(worker, "type", DEFAULT_WORKER_TYPE)
    # An explicit `replicas: 0` is kept: a role with no replicas is a legitimate (if idle) choice.
    _set_absent(worker, "replicas", DEFAULT_WORKER_REPLICAS)
    _set_absent(worker, "pods", DEFAULT_WORKER_PODS)
    pods = worker["pods"]
    if isinstance(pods, (int, float)) and not isinstance(pods, bool) and pods == 0:
        # A role instance always has its entry pod; 0 made the reference emit `workerReplicas: -1`.
        worker["pods"] = DEFAULT_WORKER_PODS
        into.warnings.append(
            f"{path}.pods: 0 is not a valid pod count (every replica has at least its entry pod); "
            f"set to {DEFAULT_WORKER_PODS}"
        )


def _default_policy(policy: object) -> None:
    if isinstance(policy, dict):
        _set_absent(policy, "tolerancePercent", DEFAULT_TOLERANCE_PERCENT)


def _set_absent(target: dict[str, Any], key: str, value: object) -> None:
    """Set a field that is absent; an explicit JSON null counts as absent (the API server prunes it)."""
    if target.get(key) is None:
        target[key] = value


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    """A deep copy made of plain dicts and lists, whatever Mapping/Sequence types came in."""
    # Exact-type tests first: JSON and YAML give plain dicts, lists and scalars, and the ABC checks below
    # cost several times more (every admission and every reconcile copies the whole object).
    kind = type(value)
    if kind is dict:
        return {
            key if type(key) is str else str(key): item if type(item) in _SCALARS else _copy(item)
            for key, item in value.items()
        }
    if kind is list:
        return [item if type(item) in _SCALARS else _copy(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(item) for item in value]
    return value
