"""The engine container's command (docs/design/synthesis.md §9, Q13, Q14).

Multi-node serving wraps the vLLM command in `bash -c` behind Ray's start-up script. Every argument,
including the KV-events JSON and the LoRA modules, goes inside that script, each shell-quoted: the reference
left them after the script, where bash took them as `$0`, `$1`... and vLLM never saw them.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.modelbooster.synthesis.backend import LoraDownload
from reconciler.modelbooster.synthesis.vllm_args import engine_args
from shared.api.modelbooster import ModelWorker
from shared.quantity import quantity_value

VLLM_ENTRYPOINT = ("python3", "-m", "vllm.entrypoints.openai.api_server")
# Relative to the vLLM image's working directory, /vllm-workspace (the newer line's path).
MULTI_NODE_SCRIPT = "examples/online_serving/multi-node-serving.sh"
DEVICE_RESOURCES = ("nvidia.com/gpu", "huawei.com/ascend-1980")
# Lets the router follow the engine's prefix cache (the reference's constant).
KV_EVENTS_CONFIG = json.dumps(
    {"enable_kv_cache_events": True, "publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:5557"},
    separators=(",", ":"),
)


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


def lora_args(loras: Sequence[LoraDownload]) -> list[str]:
    if not loras:
        return []
    return ["--enable-lora", "--lora-modules", *(f"{lora.name}={lora.output_dir}" for lora in loras)]


def engine_command(
    *,
    config: Mapping[str, Any] | None,
    model_path: str,
    loras: Sequence[LoraDownload],
    multi_node: ModelWorker | None = None,
) -> list[str]:
    """`multi_node` is the server worker when it spans several pods (pods > 1), else None."""
    argv = [*VLLM_ENTRYPOINT, "--model", model_path, *engine_args(config)]
    if multi_node is not None:
        argv += ["--distributed_executor_backend", "ray"]
    argv += ["--kv-events-config", KV_EVENTS_CONFIG, *lora_args(loras)]
    if multi_node is None:
        return argv
    leader = (
        f"chmod u+x {MULTI_NODE_SCRIPT} && {MULTI_NODE_SCRIPT} leader "
        f"--ray_cluster_size={multi_node.pods} --num-gpus={device_count(multi_node)}"
    )
    return ["bash", "-c", f"{leader} && {shlex.join(argv)}"]


def worker_command() -> list[str]:
    return [
        "bash",
        "-c",
        f"chmod u+x {MULTI_NODE_SCRIPT} && {MULTI_NODE_SCRIPT} worker --ray_address=$(ENTRY_ADDRESS)",
    ]
