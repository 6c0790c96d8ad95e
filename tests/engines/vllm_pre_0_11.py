"""vLLM's series before the 0.10/0.11 renames (the V0 engine's metrics, e.g. vLLM 0.9): what our default queries
read alone until vLLM 0.33.0's names were added, kept so that a fleet still running such a release stays tested.

Two names differ from vLLM 0.33.0's (tests/engines/vllm_0_33_0.py): inter-token latency was
`vllm:time_per_output_token_seconds` and KV-cache usage `vllm:gpu_cache_usage_perc`. The V0 engine labelled its
series `model_name` only (no `engine` index).
"""

from __future__ import annotations

from typing import Final

from tests.engines.table import COUNTER, GAUGE, HISTOGRAM, EngineTable, Measure, Series

TABLE: Final = EngineTable(
    engine="vLLM",
    version="pre-0.11",
    source="the V0 engine's metrics (vllm/engine/metrics.py before the renames)",
    model_label="model_name",
    series=(
        Series("vllm:request_success_total", COUNTER, Measure.FINISHED_REQUESTS, {"finished_reason": "stop"}),
        Series("vllm:generation_tokens_total", COUNTER, Measure.GENERATED_TOKENS),
        Series("vllm:prompt_tokens_total", COUNTER, Measure.PROMPT_TOKENS),
        Series("vllm:request_generation_tokens", HISTOGRAM, Measure.GENERATED_PER_REQUEST),
        Series("vllm:time_per_output_token_seconds", HISTOGRAM, Measure.ITL),
        Series("vllm:time_to_first_token_seconds", HISTOGRAM, Measure.TTFT),
        Series("vllm:e2e_request_latency_seconds", HISTOGRAM, Measure.E2E),
        Series("vllm:gpu_cache_usage_perc", GAUGE, Measure.KV_CACHE),
        Series("vllm:num_requests_waiting", GAUGE, Measure.WAITING),
        Series("vllm:num_requests_running", GAUGE, Measure.RUNNING),
    ),
)
