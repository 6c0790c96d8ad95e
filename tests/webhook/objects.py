"""ModelBooster objects for the webhook tests, written by hand from the API (docs/design/api.md §1)."""

from __future__ import annotations

import copy
from typing import Any


def single_vllm() -> dict[str, Any]:
    """One vLLM backend, one server worker, fixed replicas: the smallest valid ModelBooster."""
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "qwen", "namespace": "default"},
        "spec": {
            "backends": [
                {
                    "name": "main",
                    "type": "vLLM",
                    "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "workers": [
                        {
                            "type": "server",
                            "image": "vllm/vllm-openai:v0.8.5",
                            "replicas": 1,
                            "pods": 1,
                            "config": {"served-model-name": "qwen", "max-model-len": 4096},
                        }
                    ],
                }
            ]
        },
    }


def two_backends() -> dict[str, Any]:
    """Two vLLM backends under model-level autoscaling, with env, resources and a route match.

    Everything the mutating webhook would add is written out, so the object is already defaulted.
    """

    def backend(name: str, *, cost: int, gpu: str) -> dict[str, Any]:
        return {
            "name": name,
            "type": "vLLM",
            "modelURI": "hf://deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
            "cacheURI": "hostpath:///mnt/cache",
            "env": [
                {"name": "HF_ENDPOINT", "value": "https://hf-mirror.com"},
                {"name": "RUNTIME_PORT", "value": "8100"},
            ],
            "minReplicas": 1,
            "maxReplicas": 4,
            "scalingCost": cost,
            "routeWeight": 100,
            "scaleToZeroGracePeriod": "30s",
            "workers": [
                {
                    "type": "server",
                    "image": "vllm/vllm-openai:v0.8.5",
                    "replicas": 1,
                    "pods": 1,
                    "resources": {
                        "limits": {"cpu": "8", "memory": "32Gi", gpu: "1"},
                        "requests": {"cpu": "4", "memory": "16Gi", gpu: "1"},
                    },
                    "config": {
                        "served-model-name": "deepseek-r1-7b",
                        "tensor-parallel-size": 1,
                        "max-model-len": 32768,
                        "gpu-memory-utilization": 0.9,
                    },
                }
            ],
        }

    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "deepseek-r1-7b", "namespace": "llm", "labels": {"team": "inference"}},
        "spec": {
            "autoscalingPolicy": {
                "tolerancePercent": 10,
                "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": "10"}],
            },
            "costExpansionRatePercent": 200,
            "modelMatch": {"headers": {"x-model": {"exact": "deepseek-r1-7b"}}},
            "backends": [
                backend("a100", cost=100, gpu="nvidia.com/gpu"),
                backend("ascend", cost=60, gpu="huawei.com/ascend-1980"),
            ],
        },
    }


def deep(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj)
