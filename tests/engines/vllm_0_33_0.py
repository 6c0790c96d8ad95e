"""vLLM 0.33.0's series, as `vllm/v1/metrics/loggers.py` (PrometheusStatLogger) declares them.

Every one is labelled `model_name` (the served model name) and `engine` (the engine core's index, "0" for a
pod running one); `vllm:request_success` adds `finished_reason` (stop, length, abort, error, repetition).
Counters are declared without `_total`, which prometheus_client adds on export.
"""

from __future__ import annotations

from typing import Final

from tests.engines.table import COUNTER, GAUGE, HISTOGRAM, EngineTable, Measure, Series

_ENGINE: Final = {"engine": "0"}
_FINISHED: Final = {**_ENGINE, "finished_reason": "stop"}

TABLE: Final = EngineTable(
    engine="vLLM",
    version="0.33.0",
    source="vllm/v1/metrics/loggers.py",
    model_label="model_name",
    series=(
        Series("vllm:request_success_total", COUNTER, Measure.FINISHED_REQUESTS, _FINISHED),
        Series("vllm:generation_tokens_total", COUNTER, Measure.GENERATED_TOKENS, _ENGINE),
        Series("vllm:prompt_tokens_total", COUNTER, Measure.PROMPT_TOKENS, _ENGINE),
        Series("vllm:request_generation_tokens", HISTOGRAM, Measure.GENERATED_PER_REQUEST, _ENGINE),
        Series("vllm:inter_token_latency_seconds", HISTOGRAM, Measure.ITL, _ENGINE),
        Series("vllm:time_to_first_token_seconds", HISTOGRAM, Measure.TTFT, _ENGINE),
        Series("vllm:e2e_request_latency_seconds", HISTOGRAM, Measure.E2E, _ENGINE),
        Series("vllm:kv_cache_usage_perc", GAUGE, Measure.KV_CACHE, _ENGINE),
        Series("vllm:num_requests_waiting", GAUGE, Measure.WAITING, _ENGINE),
        Series("vllm:num_requests_running", GAUGE, Measure.RUNNING, _ENGINE),
    ),
)
