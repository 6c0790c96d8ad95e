"""vLLM as we launch it; every fact read from vLLM 0.33.0 (its wheel's source), the release named in `VERSION`.

The command and the multi-node script are those of the ModelServings already running (Kthena's); the drain
script is ours (engine.drain_script: Kthena's waited out the grace period on vLLM 0.33.0). A change here changes
the pod templates (the running ones kept until their owners ask: docs/design/reconciler.md §16).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1EnvVar

from shared.constants import ENV_ALLOW_RUNTIME_LORA_UPDATING
from shared.engine_config import CONFIG_KEY_SERVED_MODEL_NAME
from shared.engines.engine import Engine, Launch, LoraCall, config_args
from shared.engines.engine import drain_script as engine_drain_script
from shared.engines.vllm.series import VLLM as VLLM_SERIES
from shared.naming import ray_worker_container_name

VERSION: Final = "0.33.0"
# vllm/entrypoints/openai/api_server.py: still runs the server in 0.33.0 (deprecated for `vllm serve`).
ENTRYPOINT: Final = ("python3", "-m", "vllm.entrypoints.openai.api_server")
DEFAULT_PORT: Final = 8000  # FrontendArgs.port
# Relative to the vLLM image's working directory, /vllm-workspace (the newer line's path).
MULTI_NODE_SCRIPT: Final = "examples/online_serving/multi-node-serving.sh"
# Lets the router follow the engine's prefix cache (the reference's constant); `--kv-events-config`.
KV_EVENTS_CONFIG: Final = json.dumps(
    {"enable_kv_cache_events": True, "publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:5557"},
    separators=(",", ":"),
)
# ENV_ALLOW_RUNTIME_LORA_UPDATING (vllm/envs.py): the runtime LoRA routes (vllm/entrypoints/serve/lora/api_router.py)
# exist only with it.

# Options registered with argparse.BooleanOptionalAction (a bool field of a config dataclass, through
# vllm/engine/arg_utils.py `get_kwargs`), which therefore also take `--no-<option>`.
NEGATABLE_FLAGS: Final = frozenset(
    {
        "--allow-credentials",
        "--allow-deprecated-quantization",
        "--async-scheduling",
        "--cohere-is-reasoning-model",
        "--cudagraph-metrics",
        "--data-parallel-external-lb",
        "--data-parallel-hybrid-lb",
        "--dcp-q-replicate",
        "--disable-cascade-attn",
        "--disable-chunked-mm-input",
        "--disable-custom-all-reduce",
        "--disable-fastapi-docs",
        "--disable-hybrid-kv-cache-manager",
        "--disable-nccl-for-dp-synchronization",
        "--disable-sliding-window",
        "--disable-uvicorn-access-log",
        "--enable-auto-tool-choice",
        "--enable-batch-sharded-sampling",
        "--enable-chunked-prefill",
        "--enable-cumem-allocator",
        "--enable-dbo",
        "--enable-elastic-ep",
        "--enable-ep-weight-filter",
        "--enable-eplb",
        "--enable-expert-parallel",
        "--enable-fault-tolerance",
        "--enable-flash-late-interaction",
        "--enable-flashinfer-autotune",
        "--enable-force-include-usage",
        "--enable-hc-sp",
        "--enable-layerwise-nvtx-tracing",
        "--enable-log-deltas",
        "--enable-log-outputs",
        "--enable-log-requests",
        "--enable-logging-iteration-details",
        "--enable-lora",
        "--enable-mamba-cache-stochastic-rounding",
        "--enable-mamba-shared-prefix-checkpoint",
        "--enable-mfu-metrics",
        "--enable-mixed-moe-lora-format",
        "--enable-mm-embeds",
        "--enable-moe-shared-loras",
        "--enable-nccl-comm-suspend",
        "--enable-offline-docs",
        "--enable-per-request-metrics",
        "--enable-prefix-caching",
        "--enable-prompt-embeds",
        "--enable-prompt-tokens-details",
        "--enable-request-id-headers",
        "--enable-return-routed-experts",
        "--enable-scale-out",
        "--enable-server-load-tracking",
        "--enable-shm-tensor-arena",
        "--enable-sleep-mode",
        "--enable-ssl-refresh",
        "--enable-tokenizer-info-endpoint",
        "--enable-tower-connector-lora",
        "--enable-trace-replay",
        "--enforce-eager",
        "--exclude-tools-when-tool-choice-none",
        "--fail-on-environ-validation",
        "--fully-sharded-loras",
        "--interleave-mm-strings",
        "--jit-monitor-verbose",
        "--kv-cache-metrics",
        "--kv-sharing-fast-prefill",
        "--language-model-only",
        "--log-error-stack",
        "--long-prefill-token-threshold-adaptive",
        "--mm-device-do-normalize",
        "--mm-encoder-only",
        "--monokernel",
        "--numa-bind",
        "--ray-workers-use-nsight",
        "--return-sampling-mask",
        "--return-tokens-as-token-ids",
        "--scheduler-reserve-full-isl",
        "--skip-mm-profiling",
        "--skip-tokenizer-init",
        "--sleep-mode-offload-cudagraph",
        "--specialize-active-lora",
        "--swa-bounded-replay",
        "--tokens-only",
        "--trust-remote-code",
        "--trust-request-chat-template",
        "--trust-request-mm-kwargs",
        "--use-fp64-gumbel",
        "--use-replayssm",
        "--use-tqdm-on-load",
    }
)

# Waits for the requests these gauges count before the engine stops (engine.drain_script); the gauges are
# vllm/v1/metrics/loggers.py's.
drain_script: Final = engine_drain_script(running="vllm:num_requests_running", waiting="vllm:num_requests_waiting")


def lora_args(loras: Sequence[tuple[str, str]]) -> list[str]:
    if not loras:
        return []
    return ["--enable-lora", "--lora-modules", *(f"{name}={path}" for name, path in loras)]


def entry_command(launch: Launch) -> list[str]:
    """The server; with several pods, behind Ray's start-up script, every argument shell-quoted inside it
    (Q13: the reference left them after the script, where bash took them as `$0`, `$1`...)."""
    argv = [*ENTRYPOINT, "--model", launch.model_path, *config_args(launch.config, negatable=NEGATABLE_FLAGS)]
    if launch.pods > 1:
        argv += ["--distributed_executor_backend", "ray"]
    argv += ["--kv-events-config", KV_EVENTS_CONFIG, *lora_args(launch.loras)]
    if launch.pods <= 1:
        return argv
    leader = (
        f"chmod u+x {MULTI_NODE_SCRIPT} && {MULTI_NODE_SCRIPT} leader "
        f"--ray_cluster_size={launch.pods} --num-gpus={launch.devices}"
    )
    return ["bash", "-c", f"{leader} && {shlex.join(argv)}"]


def worker_command(launch: Launch) -> list[str]:
    """A Ray worker joining the entry pod's cluster (`ENTRY_ADDRESS`: set by Kthena's ModelServing controller)."""
    return ["bash", "-c", f"chmod u+x {MULTI_NODE_SCRIPT} && {MULTI_NODE_SCRIPT} worker --ray_address=$(ENTRY_ADDRESS)"]


def runtime_lora_enabled(env: Sequence[V1EnvVar] | None, config: Mapping[str, Any] | None) -> bool:
    """vLLM serves its LoRA routes only when the variable is `1` or `true` (any case, blanks around it ignored:
    vllm/envs.py). The first entry of that name counts (validation refuses duplicates)."""
    for entry in env or ():
        if entry.name == ENV_ALLOW_RUNTIME_LORA_UPDATING:
            return (entry.value or "").strip().lower() in ("1", "true")
    return False


def lora_load_calls(name: str, source: str, output_dir: str) -> tuple[LoraCall, ...]:
    """Through the runtime sidecar, which downloads the adapter and then calls vLLM's `/v1/load_lora_adapter`."""
    body = {"async_download": False, "lora_name": name, "output_dir": output_dir, "source": source}
    return (LoraCall(to="runtime", path="/v1/load_lora_adapter", body=body, ok=(200, 202)),)


def lora_unload_calls(name: str) -> tuple[LoraCall, ...]:
    return (LoraCall(to="runtime", path="/v1/unload_lora_adapter", body={"lora_name": name}, ok=(200,)),)


VLLM: Final = Engine(
    name="vLLM", version=VERSION, runtime_names={"vLLM": "vllm", "vLLMDisaggregated": "vllmdisaggregated"},
    default_port=DEFAULT_PORT, negatable_flags=NEGATABLE_FLAGS, served_name_key=CONFIG_KEY_SERVED_MODEL_NAME,
    entry_command=entry_command, worker_command=worker_command, worker_container=ray_worker_container_name,
    drain_script=drain_script, runtime_lora_enabled=runtime_lora_enabled, lora_load_calls=lora_load_calls,
    lora_unload_calls=lora_unload_calls, series=VLLM_SERIES,
)
