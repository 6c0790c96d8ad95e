"""SGLang's series, read from SGLang 0.5.23 (`sglang/srt/observability/metrics_collector.py`), and its default
queries.

SGLang exports them only when started with `--enable-metrics`, on its HTTP server's port at `/metrics`. Every
series carries `model_name` (the served model name: `--served-model-name`, else `--model-path`) and
`engine_type` (`unified`, or `prefill`/`decode` in SGLang's own disaggregation). The scheduler's gauges add
`tp_rank`, `pp_rank`, `moe_ep_rank` (`dp_rank` with data parallelism); only the first attention-TP rank exports
them unless `--enable-metrics-for-all-schedulers`. The tokenizer's counters and the TTFT and end-to-end
histograms add `is_streaming`. With priority scheduling the queue gauges hold the total under `priority=""` and
a breakdown under `priority="<n>"`: the queries count the total only (a label matcher `=""` also matches a
series without the label). The request counters move when a request finishes, so generated tokens over
requests is the mean length of the requests finished.
"""

from __future__ import annotations

from typing import Final

from shared.engines.series import EngineSeries, Queries, Selectors

RELEASE: Final = "0.5.23"
# What each series is for -> its name in SGLang 0.5.23, as exposed (counters with `_total`; a histogram's
# `_sum`/`_count` are added to its name).
NAMES: Final = {
    "finished_requests": ("sglang:num_requests_total",),  # counter
    "generation_tokens": ("sglang:generation_tokens_total",),  # counter
    "prompt_tokens": ("sglang:prompt_tokens_total",),  # counter
    "kv_cache_usage": ("sglang:token_usage",),  # gauge, 0..1 of the KV pool's tokens
    "waiting": ("sglang:num_queue_reqs",),  # gauge
    "running": ("sglang:num_running_reqs",),  # gauge
    "inter_token_latency": ("sglang:inter_token_latency_seconds",),  # histogram
    "time_to_first_token": ("sglang:time_to_first_token_seconds",),  # histogram
    "e2e_latency": ("sglang:e2e_request_latency_seconds",),  # histogram
}
_TOTAL_ONLY: Final = 'priority=""'


def write(selectors: Selectors) -> Queries:
    target, model = selectors.target, selectors.model
    (finished,), (generated,) = NAMES["finished_requests"], NAMES["generation_tokens"]

    def rate(name: str, selector: str) -> str:
        return f"sum(rate({name}{{{selector}}}[$window]))"

    def per_request(selector: str) -> str:
        return f"{rate(generated, selector)} / {rate(finished, selector)}"

    def mean(histogram: str) -> str:
        return f"{rate(f'{histogram}_sum', model)} / {rate(f'{histogram}_count', model)}"

    def queue(name: str) -> str:
        return f"sum({name}{{{model},{_TOTAL_ONLY}}})"

    return Queries(
        arrival=f"({rate(finished, target)} or {rate(finished, model)}) * 60",
        length=f"({per_request(target)}) or ({per_request(model)})",
        kv_cache=f"avg({NAMES['kv_cache_usage'][0]}{{{model}}})",
        waiting=queue(NAMES["waiting"][0]),
        running=queue(NAMES["running"][0]),
        itl=mean(NAMES["inter_token_latency"][0]),
        ttft=mean(NAMES["time_to_first_token"][0]),
        prompt_tokens=rate(NAMES["prompt_tokens"][0], model),
    )


SGLANG: Final[EngineSeries] = EngineSeries(
    engine="SGLang", release=RELEASE, model_label="model_name", names=NAMES, write=write
)
