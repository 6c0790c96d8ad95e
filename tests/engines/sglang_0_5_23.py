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

from tests.engines.table import COUNTER, GAUGE, HISTOGRAM, EngineTable, Measure, Series

_TOKENIZER: Final = {"engine_type": "unified"}
_STREAMING: Final = {**_TOKENIZER, "is_streaming": "false"}
_SCHEDULER: Final = {"engine_type": "unified", "tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}

TABLE: Final = EngineTable(
    engine="SGLang",
    version="0.5.23",
    source="sglang/srt/observability/metrics_collector.py",
    model_label="model_name",
    series=(
        Series("sglang:num_requests_total", COUNTER, Measure.FINISHED_REQUESTS, _STREAMING),
        Series("sglang:generation_tokens_total", COUNTER, Measure.GENERATED_TOKENS, _STREAMING),
        Series("sglang:prompt_tokens_total", COUNTER, Measure.PROMPT_TOKENS, _STREAMING),
        Series("sglang:inter_token_latency_seconds", HISTOGRAM, Measure.ITL, _TOKENIZER),
        Series("sglang:time_to_first_token_seconds", HISTOGRAM, Measure.TTFT, _STREAMING),
        Series("sglang:e2e_request_latency_seconds", HISTOGRAM, Measure.E2E, _STREAMING),
        Series("sglang:token_usage", GAUGE, Measure.KV_CACHE, _SCHEDULER),
        Series("sglang:num_queue_reqs", GAUGE, Measure.WAITING, _SCHEDULER, breakdown="priority"),
        Series("sglang:num_running_reqs", GAUGE, Measure.RUNNING, _SCHEDULER, breakdown="priority"),
    ),
)
