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
from shared.backend_shape import list_autoscaling
from shared.resources import needs_equal_limit


@dataclass
class Defaulted:
    """A defaulted deep copy of the object, the RFC 6902 ops that turn the object into it, and notes for the
    user (admission warnings)."""

    obj: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    # Recorded as each default is set: the mutating webhook's patch is what defaulting did, not a diff of
    # before and after (diffing took ten times as long as defaulting, and a general JSON diff can be wrong).
    ops: list[dict[str, Any]] = field(default_factory=list)


def apply_defaults(obj: Mapping[str, Any]) -> Defaulted:
    result = Defaulted(obj=_copy(obj))
    spec = result.obj.get("spec")
    if not isinstance(spec, dict):
        return result
    # Model-level autoscaling over a list of backends (Kthena v0.1.0's optimizer) has defaults of its own; a single
    # backend's `spec.autoscalingPolicy` (Kthena v0.2-v0.4) scales that backend and has none of them.
    model_level = list_autoscaling(spec)
    _default_policy(spec.get("autoscalingPolicy"), at="/spec/autoscalingPolicy", into=result)
    if model_level:
        _set_absent(spec, "costExpansionRatePercent", DEFAULT_COST_EXPANSION_RATE_PERCENT, at="/spec", into=result)
    backends = spec.get("backends")
    if isinstance(backends, list):
        for index, backend in enumerate(backends):
            if isinstance(backend, dict):
                _default_backend(backend, index=index, model_level=model_level, into=result)
    single = spec.get("backend")
    if isinstance(single, dict):
        # A single backend (Kthena v0.2 and later): its scheduler and its workers (docs/design/api.md §8).
        _set_absent(single, "schedulerName", DEFAULT_SINGLE_BACKEND_SCHEDULER, at="/spec/backend", into=result)
        _default_workers(single, path="spec.backend", at="/spec/backend", into=result)
        if isinstance(spec.get("autoscalingPolicy"), dict) and single.get("minReplicas") == 0:
            metadata = result.obj.get("metadata")
            model = metadata.get("name") if isinstance(metadata, dict) else None
            serving = f"{model}-{single.get('name')}" if model else "<model>-<backend>"
            result.warnings.append(zero_minimum_warning(serving))
    return result


def zero_minimum_warning(serving: str) -> str:
    """Admitted as Kthena v0.4.0 admitted it, saying what keeps such a backend at zero (docs/design/api.md §8)."""
    return (
        "spec.backend.minReplicas: 0 with spec.autoscalingPolicy: the backend starts with no pod, and its "
        "autoscaler reads the policy's metrics from the backend's pods, so nothing scales it up from zero; set "
        "minReplicas to 1 to serve at once, or scale its ModelServing yourself (kubectl scale "
        f"modelservings.workload.serving.volcano.sh {serving} --replicas=1), after which the policy takes over"
    )


def _default_backend(backend: dict[str, Any], *, index: int, model_level: bool, into: Defaulted) -> None:
    at = f"/spec/backends/{index}"
    _set_absent(backend, "routeWeight", DEFAULT_ROUTE_WEIGHT, at=at, into=into)
    if model_level:
        _set_absent(backend, "scaleToZeroGracePeriod", DEFAULT_SCALE_TO_ZERO_GRACE_PERIOD, at=at, into=into)
    _default_policy(backend.get("autoscalingPolicy"), at=f"{at}/autoscalingPolicy", into=into)
    _default_workers(backend, path=f"spec.backends[{index}]", at=at, into=into)


def _default_workers(backend: dict[str, Any], *, path: str, at: str, into: Defaulted) -> None:
    workers = backend.get("workers")
    if not isinstance(workers, list):
        return
    for index, worker in enumerate(workers):
        if isinstance(worker, dict):
            _default_worker(worker, path=f"{path}.workers[{index}]", at=f"{at}/workers/{index}", into=into)


def _default_worker(worker: dict[str, Any], *, path: str, at: str, into: Defaulted) -> None:
    _set_absent(worker, "type", DEFAULT_WORKER_TYPE, at=at, into=into)
    # An explicit `replicas: 0` is kept: a role with no replicas is a legitimate (if idle) choice.
    _set_absent(worker, "replicas", DEFAULT_WORKER_REPLICAS, at=at, into=into)
    _set_absent(worker, "pods", DEFAULT_WORKER_PODS, at=at, into=into)
    _default_limits(worker.get("resources"), path=f"{path}.resources", at=f"{at}/resources", into=into)
    pods = worker["pods"]
    if isinstance(pods, (int, float)) and not isinstance(pods, bool) and pods == 0:
        # A role instance always has its entry pod; 0 made the reference emit `workerReplicas: -1`.
        worker["pods"] = DEFAULT_WORKER_PODS
        into.ops.append({"op": "replace", "path": f"{at}/pods", "value": DEFAULT_WORKER_PODS})
        into.warnings.append(
            f"{path}.pods: 0 is not a valid pod count (every replica has at least its entry pod); "
            f"set to {DEFAULT_WORKER_PODS}"
        )


def _default_limits(resources: object, *, path: str, at: str, into: Defaulted) -> None:
    """An extended resource or huge pages requested without a limit get the request as the limit, the only value
    Kubernetes allows (it refuses such a container: "Limit must be set for non overcommitable resources"). Kthena
    admits such a worker, and its pods never start; we admit it and they do (docs/design/api.md §6)."""
    if not isinstance(resources, dict) or not isinstance(resources.get("requests"), dict):
        return
    requests, limits = resources["requests"], resources.get("limits")
    if limits is not None and not isinstance(limits, dict):
        return  # malformed: validation says so
    missing = [
        (name, quantity)
        for name, quantity in requests.items()
        if needs_equal_limit(name)
        and isinstance(quantity, (str, int))
        and not isinstance(quantity, bool)
        and (limits is None or limits.get(name) is None)
    ]
    if not missing:
        return
    if limits is None:
        into.ops.append({"op": "replace" if "limits" in resources else "add", "path": f"{at}/limits", "value": {}})
        limits = resources["limits"] = {}
    for name, quantity in missing:
        into.ops.append({"op": "replace" if name in limits else "add", "path": f"{at}/limits/{_pointer(name)}",
                         "value": quantity})  # fmt: skip
        limits[name] = quantity
        into.warnings.append(
            f"{path}.limits[{name}]: set to the request, {quantity}: Kubernetes does not overcommit extended resources "
            "and huge pages, so a container that requests one needs a limit equal to the request"
        )


def _pointer(key: str) -> str:
    """`nvidia.com/gpu` as one JSON Pointer step (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _default_policy(policy: object, *, at: str, into: Defaulted) -> None:
    if isinstance(policy, dict):
        _set_absent(policy, "tolerancePercent", DEFAULT_TOLERANCE_PERCENT, at=at, into=into)


def _set_absent(target: dict[str, Any], key: str, value: object, *, at: str, into: Defaulted) -> None:
    """Set a field that is absent; an explicit JSON null counts as absent (the API server prunes it).

    `at` is the JSON Pointer of `target` in the object; the keys set here need no escaping."""
    if target.get(key) is None:
        into.ops.append({"op": "replace" if key in target else "add", "path": f"{at}/{key}", "value": value})
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
