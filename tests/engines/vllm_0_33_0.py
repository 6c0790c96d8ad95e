"""vLLM 0.33.0's series, as `vllm/v1/metrics/loggers.py` (PrometheusStatLogger) declares them.

Every one is labelled `model_name` (the served model name) and `engine` (the engine core's index, "0" for a
pod running one); `vllm:request_success` adds `finished_reason` (stop, length, abort, error, repetition).
Counters are declared without `_total`, which prometheus_client adds on export. `vllm:num_requests_waiting_by_reason`
splits the waiting by `reason` (capacity, deferred), which add up to `vllm:num_requests_waiting`.
"""

from __future__ import annotations

from typing import Final

from tests.engines.table import EngineTable, series

TABLE: Final = EngineTable(engine="vLLM", version="0.33.0", model_label="model_name", series=series("""
        vllm:request_success_total        counter    FINISHED_REQUESTS      engine=0 finished_reason=stop
        vllm:generation_tokens_total      counter    GENERATED_TOKENS       engine=0
        vllm:prompt_tokens_total          counter    PROMPT_TOKENS          engine=0
        vllm:request_generation_tokens    histogram  GENERATED_PER_REQUEST  engine=0
        vllm:inter_token_latency_seconds  histogram  ITL                    engine=0
        vllm:time_to_first_token_seconds  histogram  TTFT                   engine=0
        vllm:e2e_request_latency_seconds  histogram  E2E                    engine=0
        vllm:kv_cache_usage_perc          gauge      KV_CACHE               engine=0
        vllm:num_requests_waiting         gauge      WAITING                engine=0
        vllm:num_requests_waiting_by_reason  gauge   WAITING_FOR_CAPACITY   engine=0 reason=capacity
        vllm:num_requests_waiting_by_reason  gauge   DEFERRED               engine=0 reason=deferred
        vllm:num_requests_running         gauge      RUNNING                engine=0
    """), source="vllm/v1/metrics/loggers.py")  # fmt: skip
