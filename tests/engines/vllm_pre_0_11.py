"""vLLM's series before the 0.10/0.11 renames (the V0 engine's metrics, e.g. vLLM 0.9): what our default queries
read alone until vLLM 0.33.0's names were added, kept so that a fleet still running such a release stays tested.

Two names differ from vLLM 0.33.0's (tests/engines/vllm_0_33_0.py): inter-token latency was
`vllm:time_per_output_token_seconds` and KV-cache usage `vllm:gpu_cache_usage_perc`. The V0 engine labelled its
series `model_name` only (no `engine` index).
"""

from __future__ import annotations

from typing import Final

from tests.engines.table import EngineTable, series

TABLE: Final = EngineTable(engine="vLLM", version="pre-0.11", model_label="model_name", series=series("""
        vllm:request_success_total          counter    FINISHED_REQUESTS      finished_reason=stop
        vllm:generation_tokens_total        counter    GENERATED_TOKENS
        vllm:prompt_tokens_total            counter    PROMPT_TOKENS
        vllm:request_generation_tokens      histogram  GENERATED_PER_REQUEST
        vllm:time_per_output_token_seconds  histogram  ITL
        vllm:time_to_first_token_seconds    histogram  TTFT
        vllm:e2e_request_latency_seconds    histogram  E2E
        vllm:gpu_cache_usage_perc           gauge      KV_CACHE
        vllm:num_requests_waiting           gauge      WAITING
        vllm:num_requests_running           gauge      RUNNING
    """), source="the V0 engine's metrics (vllm/engine/metrics.py before the renames)")  # fmt: skip
