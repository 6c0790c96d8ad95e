"""Fresh ModelBooster objects for tests: a valid baseline that each test bends in one place."""

from __future__ import annotations

from typing import Any

API_VERSION = "workload.serving.volcano.sh/v1alpha1"


def worker(**fields: Any) -> dict[str, Any]:
    return {"type": "server", "image": "vllm/vllm-openai:v0.10.1", **fields}


def backend(name: str = "a", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": name,
        "type": "vLLM",
        "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "minReplicas": 1,
        "maxReplicas": 1,
        "workers": [worker()],
    }
    base.update(fields)
    return base


def pd_workers(*, prefill: dict[str, Any] | None = None, decode: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [worker(type="prefill", **(prefill or {})), worker(type="decode", **(decode or {}))]


def modelbooster(*backends: dict[str, Any], name: str = "m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelBooster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"backends": list(backends) or [backend()], **spec},
    }


def single_backend(name: str = "a", **fields: Any) -> dict[str, Any]:
    """A backend in Kthena v1.0's shape (`spec.backend`): `replicas` instead of a replica range."""
    base = {key: value for key, value in backend(name).items() if key not in ("minReplicas", "maxReplicas")}
    return {**base, "replicas": 1, **fields}


def range_backend(name: str = "a", **fields: Any) -> dict[str, Any]:
    """A backend in Kthena v0.2-v0.4's shape (`spec.backend`): a replica range, no route weight or policy."""
    return {**backend(name), **fields}


def single_modelbooster(one: dict[str, Any] | None = None, *, name: str = "m", **spec: Any) -> dict[str, Any]:
    obj = modelbooster(name=name, **spec)
    del obj["spec"]["backends"]
    obj["spec"]["backend"] = one or single_backend()
    return obj


def policy(**fields: Any) -> dict[str, Any]:
    return {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}], **fields}
