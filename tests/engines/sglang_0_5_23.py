"""SGLang 0.5.23's series, as `sglang/srt/observability/metrics_collector.py` declares them (served at
`/metrics` on the server's port with `--enable-metrics`).

Labels: the scheduler's gauges (SchedulerMetricsCollector) carry `model_name`, `engine_type` ("unified" outside
SGLang's own disaggregation), `tp_rank`, `pp_rank`, `moe_ep_rank`; the tokenizer's series
(TokenizerMetricsCollector, `tokenizer_metric_labels`) `model_name` and `engine_type`, plus `is_streaming` on the
request, prompt and generation counters and on the TTFT and end-to-end histograms (not on ITL's). With
`--enable-priority-scheduling` the queue gauges hold their total under `priority=""` and each priority's part
under `priority="<n>"` (`_log_gauge_queue_count`). The request and token counters move when a request finishes
(`observe_one_finished_request`). Counters are declared with `_total`, which prometheus_client strips and adds
back on export.
"""

from __future__ import annotations

from typing import Final

from tests.engines.table import EngineTable, series

# Labels as a lone pod has them: the tokenizer's series engine_type (and is_streaming), the scheduler's gauges
# engine_type and rank 0 of tp, pp and moe-ep (no data parallelism, so no dp_rank).
TABLE: Final = EngineTable(engine="SGLang", version="0.5.23", model_label="model_name", series=series("""
        sglang:num_requests_total           counter    FINISHED_REQUESTS  engine_type=unified is_streaming=false
        sglang:generation_tokens_total      counter    GENERATED_TOKENS   engine_type=unified is_streaming=false
        sglang:prompt_tokens_total          counter    PROMPT_TOKENS      engine_type=unified is_streaming=false
        sglang:inter_token_latency_seconds  histogram  ITL                engine_type=unified
        sglang:time_to_first_token_seconds  histogram  TTFT               engine_type=unified is_streaming=false
        sglang:e2e_request_latency_seconds  histogram  E2E                engine_type=unified is_streaming=false
        sglang:token_usage      gauge KV_CACHE engine_type=unified tp_rank=0 pp_rank=0 moe_ep_rank=0
        sglang:num_queue_reqs   gauge WAITING  engine_type=unified tp_rank=0 pp_rank=0 moe_ep_rank=0 breakdown:priority
        sglang:num_running_reqs gauge RUNNING  engine_type=unified tp_rank=0 pp_rank=0 moe_ep_rank=0 breakdown:priority
    """), source="sglang/srt/observability/metrics_collector.py")  # fmt: skip
