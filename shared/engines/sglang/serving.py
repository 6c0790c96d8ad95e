"""SGLang as we launch it; every fact read from SGLang 0.5.23 (its wheel's source), the release named in `VERSION`.

Options: sglang/srt/arg_groups/fields/*.py (dataclass fields made options by arg_groups/arg_utils.py) and
sglang/srt/server_args.py; routes: sglang/srt/entrypoints/http_server.py; request bodies:
sglang/srt/managers/io_struct.py; series: sglang/srt/observability/metrics_collector.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1EnvVar

from shared.engine_config import CONFIG_KEY_SERVED_MODEL_NAME
from shared.engines.engine import Engine, Launch, LoraCall, config_args, option_name, sets_option
from shared.engines.engine import drain_script as engine_drain_script
from shared.engines.sglang.series import SGLANG as SGLANG_SERIES

VERSION: Final = "0.5.23"
ENTRYPOINT: Final = ("python3", "-m", "sglang.launch_server")
DEFAULT_PORT: Final = 30000  # Serving.port
# The torch.distributed rendezvous of a multi-pod instance, on the entry pod (`--dist-init-addr host:port`).
DIST_INIT_PORT: Final = 20000
# Options registered with argparse.BooleanOptionalAction, which therefore also take `--no-<option>`; every other
# boolean option is `store_true` (off unless given).
NEGATABLE_FLAGS: Final = frozenset(
    {
        "--dcp-replicate-q-proj",
        "--dllm-fdfo",
        "--enable-decoder-swa-bounded-replay",
        "--enable-dsa-fused-indexer",
        "--enable-fused-qk-norm-rope",
        "--enable-tf32-matmul",
        "--enable-tp-lm-head-all-to-all",
        "--experts-shared-outer-loras",
        "--lora-strict-loading",
        "--mm-enable-dp-encoder",
        "--ple-offload-embedding",
        "--speculative-enable-w4a4-mxfp4-megamoe",
    }
)
ENABLE_LORA: Final = "enable-lora"

# Waits for the requests these gauges count before the engine stops (engine.drain_script).
drain_script: Final = engine_drain_script(
    running="sglang:num_running_reqs", waiting="sglang:num_queue_reqs", parts_label="priority"
)


def _options(launch: Launch) -> dict[str, Any]:
    """The worker's config under our defaults: the user's keys win, except metrics, which are always on (the
    drain script, the router and Inferno read them; SGLang serves no `/metrics` without `--enable-metrics`)."""
    config = dict(launch.config or {})
    defaults: dict[str, Any] = {"host": "0.0.0.0", "port": launch.port}
    defaults[CONFIG_KEY_SERVED_MODEL_NAME] = launch.served_name
    total_devices = launch.devices * launch.pods
    if total_devices > 1:  # one instance spans every accelerator of its pods
        defaults["tp-size"] = total_devices
    taken = {option_name(key) for key in config}
    if "tensor-parallel-size" in taken:  # the alias of `--tp-size`
        taken.add("tp-size")
    merged = {key: value for key, value in defaults.items() if key not in taken}
    merged.update({key: value for key, value in config.items() if option_name(key) != "enable-metrics"})
    merged["enable-metrics"] = True
    return merged


def _argv(launch: Launch) -> list[str]:
    options = _options(launch)
    argv = [*ENTRYPOINT, "--model-path", launch.model_path, *config_args(options, negatable=NEGATABLE_FLAGS)]
    if launch.loras:
        if not sets_option(options, [ENABLE_LORA]):
            argv.append("--" + ENABLE_LORA)
        argv += ["--lora-paths", *(f"{name}={path}" for name, path in launch.loras)]
    return argv


def _multi_node(launch: Launch, rank: str) -> list[str]:
    # ENTRY_ADDRESS and WORKER_INDEX are set in every pod by Kthena's ModelServing controller; Kubernetes expands
    # `$(VAR)` in a command from the container's environment.
    return ["--nnodes", str(launch.pods), "--node-rank", rank, "--dist-init-addr", f"$(ENTRY_ADDRESS):{DIST_INIT_PORT}"]


def worker_container(backend: str) -> str:
    return "engine"


def entry_command(launch: Launch) -> list[str]:
    argv = _argv(launch)
    return argv + _multi_node(launch, "0") if launch.pods > 1 else argv


def worker_command(launch: Launch) -> list[str]:
    return _argv(launch) + _multi_node(launch, "$(WORKER_INDEX)")


def runtime_lora_enabled(env: Sequence[V1EnvVar] | None, config: Mapping[str, Any] | None) -> bool:
    """SGLang takes adapters at run time whenever it runs with LoRA on: the server worker's config sets
    `enable-lora` (so every pod template carries it, with or without adapters at start)."""
    for key, value in (config or {}).items():
        if option_name(key) == ENABLE_LORA:
            return value is True or value is None or value == ""
    return False


def lora_load_calls(name: str, source: str, output_dir: str) -> tuple[LoraCall, ...]:
    """The runtime sidecar downloads the adapter (`/v1/download_model`), then SGLang loads it from there
    (LoadLoRAAdapterReqInput: `lora_name`, `lora_path`; 200, or 400 with the reason)."""
    download = {"async_download": False, "output_dir": output_dir, "source": source}
    return (
        LoraCall(to="runtime", path="/v1/download_model", body=download, ok=(200,)),
        LoraCall(to="engine", path="/load_lora_adapter", body={"lora_name": name, "lora_path": output_dir}, ok=(200,)),
    )


def lora_unload_calls(name: str) -> tuple[LoraCall, ...]:
    """UnloadLoRAAdapterReqInput: `lora_name`."""
    return (LoraCall(to="engine", path="/unload_lora_adapter", body={"lora_name": name}, ok=(200,)),)


SGLANG: Final = Engine(
    name="SGLang", version=VERSION, runtime_names={"SGLang": "sglang"}, default_port=DEFAULT_PORT,
    negatable_flags=NEGATABLE_FLAGS, served_name_key=CONFIG_KEY_SERVED_MODEL_NAME, entry_command=entry_command,
    worker_command=worker_command, worker_container=worker_container, drain_script=drain_script,
    runtime_lora_enabled=runtime_lora_enabled, lora_load_calls=lora_load_calls, lora_unload_calls=lora_unload_calls,
    series=SGLANG_SERIES,
)
