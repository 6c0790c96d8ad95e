"""What synthesis, admission and dynamic LoRA need to know about one inference engine (docs/design/synthesis.md §9).

An engine is data plus a few functions over it: one module per engine fills an `Engine` in
(`shared/engines/<engine>/serving.py`, each fact with the release it was read from), and callers ask it instead of
comparing names, so a third engine is one new module and one line in `shared/engines/registry.py`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from kubernetes.client import V1EnvVar

from shared.engines.series import EngineSeries

# Integral floats below this print as integers (`2.0` -> `2`), so an int option written as a float still
# parses; beyond it the exponent form is shorter and no engine's integer option gets that large anyway.
_INTEGRAL_FLOAT_LIMIT: Final = 1e21

HEALTH_PATH: Final = "/health"
METRICS_PATH: Final = "/metrics"


@dataclass(frozen=True)
class Launch:
    """What one engine container is started with: everything synthesis knows that shapes its command.

    `pods` is how many pods one engine instance spans (the server worker's `pods`; 1 for prefill/decode roles),
    `devices` the accelerators of each of them, `loras` the adapters downloaded before start, as (name, path).
    """

    model_path: str
    config: Mapping[str, Any] | None
    port: int
    served_name: str
    loras: tuple[tuple[str, str], ...] = ()
    pods: int = 1
    devices: int = 0


@dataclass(frozen=True)
class LoraCall:
    """One HTTP request of a dynamic LoRA change: POST `path` on the pod's runtime sidecar or its engine."""

    to: Literal["runtime", "engine"]
    path: str
    body: Mapping[str, Any]
    ok: tuple[int, ...]


@dataclass(frozen=True)
class Engine:
    """One inference engine. `name` is the ModelBooster backend type and the ModelServer `inferenceEngine`;
    `version` the release every fact here was read from."""

    name: str
    version: str
    # The backend types this engine serves -> the runtime sidecar's `--engine` for each (Kthena's runtime,
    # python/kthena/runtime/standard.py, knows `vllm`, `vllmdisaggregated` and `sglang`).
    runtime_names: Mapping[str, str]
    default_port: int  # where the engine listens when no worker sets `config.port`
    negatable_flags: frozenset[str]  # options that also have a `--no-` form, for `false` in a config
    served_name_key: str  # the config key (option) naming the model in requests and in the metrics' `model_name`
    entry_command: Callable[[Launch], list[str]]  # the command of the pod that serves HTTP
    worker_command: Callable[[Launch], list[str]]  # the command of the other pods of a multi-pod instance
    worker_container: Callable[[str], str]  # the container name of the other pods, for a backend name
    drain_script: Callable[[int], str]  # the preStop script, for an engine listening on that port
    # Whether a backend (its env, the server worker's config) takes adapter changes at run time.
    runtime_lora_enabled: Callable[[Sequence[V1EnvVar] | None, Mapping[str, Any] | None], bool]
    lora_load_calls: Callable[[str, str, str], tuple[LoraCall, ...]]  # (name, source, output dir)
    lora_unload_calls: Callable[[str], tuple[LoraCall, ...]]  # (name)
    series: EngineSeries  # its Prometheus series and the default queries over them


def port_script(script: str) -> Callable[[int], str]:
    """A shell script written as a `str.format` template over `{port}`, as a function of the port. Split once:
    `str.format` re-parses the whole script on every call."""
    head, tail = script.format(port="\0").split("\0")

    def render(port: int) -> str:
        return f"{head}{port}{tail}"

    return render


_DRAIN_SCRIPT: Final = """\
while true; do
  METRICS=$(curl -s --max-time 2 http://localhost:{port}/metrics)
  if ! echo "$METRICS" | grep -q '^RUNNING_GAUGE[{{ ]'; then
    echo "Terminating: Metrics endpoint unavailable, exiting preStop" >> /proc/1/fd/1
    exit 0
  fi
  RUNNING=$(echo "$METRICS" | awk '/^RUNNING_GAUGE[{{ ]/PARTS {{s += $NF}} END {{print s + 0}}')
  WAITING=$(echo "$METRICS" | awk '/^WAITING_GAUGE[{{ ]/PARTS {{s += $NF}} END {{print s + 0}}')
  if [ "$RUNNING" = "0" ] && [ "$WAITING" = "0" ]; then
    echo "Terminating: No active or waiting requests, safe to terminate" >> /proc/1/fd/1
    exit 0
  fi
  echo "Terminating: Running: $RUNNING, Waiting: $WAITING" >> /proc/1/fd/1
  sleep 5
done
"""


def drain_script(*, running: str, waiting: str, parts_label: str | None = None) -> Callable[[int], str]:
    """The preStop script of an engine whose gauges `running` and `waiting` count the requests in flight, as a
    function of its port: it polls /metrics every 5 s until both are 0, and gives up at once when the metrics are
    unreachable (the pod stops anyway, at the latest when its grace period ends).

    Each gauge is summed over its lines (one per engine core or scheduler process: data parallelism) and matched
    by its exact name, since another gauge may start with it (vLLM 0.33.0's `vllm:num_requests_waiting_by_reason`).
    Kthena's vLLM script compared the text of every line matching a prefix with "0.0", which several lines never
    equal: it waited out the whole grace period at every stop (docs/engines.md).

    `parts_label`: a label under which the engine may also break a gauge down (SGLang's `priority`), its total
    then under the empty value; the parts are left out of the sum, so the log counts each request once."""
    for name in (running, waiting, *((parts_label,) if parts_label is not None else ())):
        if not name or any(not (c.isalnum() or c in "_:") for c in name):
            raise ValueError(f"a Prometheus name without regular-expression characters, got {name!r}")
    # Within the script's `str.format` template, so its brace doubled.
    parts = " && !/[{{,]" + parts_label + '="[^"]/' if parts_label else ""
    script = _DRAIN_SCRIPT.replace("RUNNING_GAUGE", running).replace("WAITING_GAUGE", waiting)
    return port_script(script.replace("PARTS", parts))


# ---------------------------------------------------------------------------------------------------------------
# A worker's `config` as command-line options: the one renderer every engine uses (docs/design/synthesis.md §9).


def flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def number_text(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value.is_integer() and abs(value) < _INTEGRAL_FLOAT_LIMIT:
        return str(int(value))
    return repr(value)


def scalar_text(value: object) -> str:
    """One JSON value as a single argument ("" for null)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return number_text(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def value_texts(value: object) -> list[str]:
    """The arguments that follow a flag; empty for a bare flag."""
    if isinstance(value, list):
        return [text for text in (scalar_text(item) for item in value) if text]
    text = scalar_text(value)
    return [text] if text else []


def option_args(key: str, value: object, *, negatable: frozenset[str]) -> list[str]:
    """One config entry as options: `true` a bare flag; `false` the `--no-` form where the engine has one, else
    nothing (the option is off unless given); null, "" and [] a bare flag; anything else `--key value...`."""
    option = flag(key)
    if value is True:
        return [option]
    if value is False:
        return ["--no-" + option[2:]] if option in negatable else []
    return [option, *value_texts(value)]


def config_args(config: Mapping[str, Any] | None, *, negatable: frozenset[str] = frozenset()) -> list[str]:
    """`--flag value` arguments for a worker config object (None: no arguments), keys sorted by their bytes."""
    args: list[str] = []
    if not config:
        return args
    # Python orders str by code point, which is the byte order of their UTF-8 form, as in the reference.
    for key in sorted(config):
        args.extend(option_args(key, config[key], negatable=negatable))
    return args


def option_name(key: str) -> str:
    """A config key as the option it names (`tensor_parallel_size` and `tensor-parallel-size` are one option)."""
    return key.replace("_", "-")


def sets_option(config: Mapping[str, Any] | None, names: Sequence[str]) -> bool:
    """Whether the config sets one of these options (under any spelling of `_`/`-`)."""
    wanted = set(names)
    return any(option_name(key) in wanted for key in config or ())
