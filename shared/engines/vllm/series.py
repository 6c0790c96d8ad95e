"""vLLM's series, read from vLLM 0.33.0 (`vllm/v1/metrics/loggers.py`), and its default queries.

Every series carries `model_name` (the served model name: `--served-model-name`, else the `--model` value) and
`engine` (the engine core's index). Two were renamed in the 0.10/0.11 line, the old names hidden and then
removed: inter-token latency (`vllm:time_per_output_token_seconds` -> `vllm:inter_token_latency_seconds`) and
KV-cache usage (`vllm:gpu_cache_usage_perc` -> `vllm:kv_cache_usage_perc`). Their queries read both with `or`
per pod (after rate() or as the gauge, one pod's two names have the same labels, so a pod exporting both counts
once), so a fleet mixing vLLM releases is measured whole.
"""

from __future__ import annotations

from typing import Final

from shared.engines.series import EngineSeries, Queries, Selectors

RELEASE: Final = "0.33.0"
# What each series is for -> its name in vLLM 0.33.0, then the pre-0.11 name where it differed. Counters and
# histograms as exposed (`_total`, and `_sum`/`_count` added to a histogram's name).
NAMES: Final = {
    "finished_requests": ("vllm:request_success_total",),  # counter, also labelled finished_reason
    "generation_tokens_per_request": ("vllm:request_generation_tokens",),  # histogram
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),  # gauge, 0..1
    "waiting": ("vllm:num_requests_waiting",),  # gauge
    "running": ("vllm:num_requests_running",),  # gauge
    "inter_token_latency": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),  # histogram
    "time_to_first_token": ("vllm:time_to_first_token_seconds",),  # histogram
    "prompt_tokens": ("vllm:prompt_tokens_total",),  # counter
    "generation_tokens": ("vllm:generation_tokens_total",),  # counter
    "e2e_latency": ("vllm:e2e_request_latency_seconds",),  # histogram
}


def _mean(histograms: tuple[str, ...], selector: str) -> str:
    """The mean of a histogram over $window, reading every name it had (a pod counts under its newest)."""

    def rates(suffix: str) -> str:
        return " or ".join(f"rate({name}_{suffix}{{{selector}}}[$window])" for name in histograms)

    return f"sum({rates('sum')}) / sum({rates('count')})"


def write(selectors: Selectors) -> Queries:
    target, model = selectors.target, selectors.model
    finished = NAMES["finished_requests"][0]
    length = NAMES["generation_tokens_per_request"][0]

    def arrival(selector: str) -> str:
        return f"sum(rate({finished}{{{selector}}}[$window]))"

    def per_request(selector: str) -> str:
        return (
            f"sum(rate({length}_sum{{{selector}}}[$window])) / sum(rate({length}_count{{{selector}}}[$window]))"
        )

    kv = " or ".join(f"{name}{{{model}}}" for name in NAMES["kv_cache_usage"])
    return Queries(
        arrival=f"({arrival(target)} or {arrival(model)}) * 60",
        length=f"({per_request(target)}) or ({per_request(model)})",
        kv_cache=f"avg({kv})",
        waiting=f"sum({NAMES['waiting'][0]}{{{model}}})",
        running=f"sum({NAMES['running'][0]}{{{model}}})",
        itl=_mean(NAMES["inter_token_latency"], model),
        ttft=_mean(NAMES["time_to_first_token"], model),
        prompt_tokens=f"sum(rate({NAMES['prompt_tokens'][0]}{{{model}}}[$window]))",
    )


VLLM: Final[EngineSeries] = EngineSeries(
    engine="vLLM", release=RELEASE, model_label="model_name", names=NAMES, write=write
)
