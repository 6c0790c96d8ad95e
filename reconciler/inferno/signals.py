"""What a targeted Server's pods report besides their load: saturation and latency (docs/design/inferno.md §14, §15).

Instant queries through the bounded Prometheus client, from templates with the variables of the load queries
(reconciler.inferno.load) plus `$role` (a disaggregated backend's `prefill` or `decode`; empty otherwise):
- saturation (reconciler.inferno.saturation): mean KV-cache usage (either metric name), requests waiting and
  running (totals);
- latency, means over `$window` from the engine's histograms: inter-token latency (vLLM 0.33's
  `vllm:inter_token_latency_seconds`, or before 0.11 `vllm:time_per_output_token_seconds`; SGLang's
  `sglang:inter_token_latency_seconds`) and time to first token (`*:time_to_first_token_seconds`), in seconds,
  reported in ms;
- for a disaggregated backend's prefill side, the prompt-token rate (`vllm:prompt_tokens_total`, tokens/s).

Each in the forms of the engine that serves the target (shared/engines/<engine>/series.py, `for_engine`).

Unlike the load, a missing signal blocks nothing: it is None, and what needed it (the guardrail, the
estimator) says it is blind this period. All queries of one Server run concurrently; each answer is one
number (the client refuses more than one series), each bounded in time and bytes by the client.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from string import Template
from typing import Final

from reconciler.inferno.load import MAX_QUERY_CHARS, VARIABLES, promql_string
from reconciler.inferno.prometheus import PrometheusClient, QueryFailure
from reconciler.inferno.saturation import (
    DEFAULT_KV_CACHE_QUERY,
    DEFAULT_RUNNING_QUERY,
    DEFAULT_WAITING_QUERY,
    Signals,
)
from shared.engines.series import EngineSeries, Queries, default_series, engines

SIGNAL_VARIABLES: Final = VARIABLES | {"role"}
# vLLM's forms; a target served by another engine reads that engine's (SignalQueries.for_engine).
DEFAULT_ITL_QUERY: Final = default_series().queries.itl
DEFAULT_TTFT_QUERY: Final = default_series().queries.ttft
DEFAULT_PROMPT_QUERY: Final = default_series().queries.prompt_tokens


# The reconciler's flag for each query (reconciler/inferno/settings.py): messages name what the user set.
SIGNAL_FLAGS: Final = {
    "kv_cache": "--inferno-prometheus-kv-cache-query",
    "waiting": "--inferno-prometheus-waiting-query",
    "running": "--inferno-prometheus-running-query",
    "itl": "--inferno-prometheus-itl-query",
    "ttft": "--inferno-prometheus-ttft-query",
    "prompt_tokens": "--inferno-prometheus-prompt-tokens-query",
}


class SignalQueryError(ValueError):
    """A signal query template that cannot be used; the message names its flag."""


@dataclass(frozen=True)
class SignalQueries:
    kv_cache: str = DEFAULT_KV_CACHE_QUERY
    waiting: str = DEFAULT_WAITING_QUERY
    running: str = DEFAULT_RUNNING_QUERY
    itl: str = DEFAULT_ITL_QUERY
    ttft: str = DEFAULT_TTFT_QUERY
    prompt_tokens: str = DEFAULT_PROMPT_QUERY
    window: str = "2m"

    def __post_init__(self) -> None:
        for name, flag in SIGNAL_FLAGS.items():
            text = getattr(self, name)
            template = Template(text)
            if not template.is_valid():
                raise SignalQueryError(f"{flag}: not a valid template (a lone $? write $$ for a literal $)")
            unknown = set(template.get_identifiers()) - SIGNAL_VARIABLES
            if unknown:
                known = ", ".join(sorted(SIGNAL_VARIABLES))
                raise SignalQueryError(f"{flag}: unknown variable(s) {', '.join(sorted(unknown))}; known: {known}")
            if len(text) > MAX_QUERY_CHARS:
                raise SignalQueryError(f"{flag}: longer than {MAX_QUERY_CHARS} characters")

    def for_engine(self, series: EngineSeries) -> SignalQueries:
        """These queries for a target `series`'s engine serves: a default becomes that engine's, a query the
        user wrote stays."""
        return self._defaults_from(series.queries)

    def for_role(self, series: EngineSeries | None = None) -> SignalQueries:
        """The defaults narrowed to one role's pods of `series`'s engine (vLLM's if None); a query the user wrote
        is theirs to narrow."""
        return self._defaults_from((series or default_series()).role_queries)

    def _defaults_from(self, engine: Queries) -> SignalQueries:
        """Each query that is some engine's default replaced by `engine`'s (already resolved queries too)."""
        defaults = [series.queries for series in engines().values()]
        return SignalQueries(
            **{
                name: getattr(engine, name) if any(getattr(self, name) == getattr(d, name) for d in defaults)
                else getattr(self, name)
                for name in SIGNAL_FLAGS
            },
            window=self.window,
        )  # fmt: skip

    def render(self, text: str, *, namespace: str, model: str, server: str, target: str, role: str = "") -> str:
        values = {
            "namespace": promql_string(namespace),
            "model": promql_string(model),
            "server": promql_string(server),
            "target": promql_string(target),
            "role": promql_string(role),
            "window": self.window,
        }
        return Template(text).substitute(values)


@dataclass(frozen=True)
class ServerSignals:
    """One period's signals of one Server (or one role of it); None where Prometheus gave no number."""

    kv_cache: float | None = None
    waiting: float | None = None
    running: float | None = None
    itl_ms: float | None = None
    ttft_ms: float | None = None
    prompt_tokens_per_second: float | None = None
    missing: tuple[str, ...] = ()  # which, and why, for the status

    @property
    def saturation(self) -> Signals:
        return Signals(kv_cache=self.kv_cache, waiting=self.waiting, running=self.running)


async def measure_signals(
    client: PrometheusClient,
    queries: SignalQueries,
    *,
    namespace: str,
    model: str,
    server: str,
    target: str,
    role: str = "",
    prompt_tokens: bool = False,
) -> ServerSignals:
    names = ["kv_cache", "waiting", "running", "itl", "ttft"] + (["prompt_tokens"] if prompt_tokens else [])
    variables = {"namespace": namespace, "model": model, "server": server, "target": target, "role": role}
    answers = await asyncio.gather(
        *(client.query_number(queries.render(getattr(queries, name), **variables)) for name in names),
        return_exceptions=True,
    )
    values: dict[str, float | None] = {}
    missing: list[str] = []
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, QueryFailure):
            values[name] = None
            missing.append(f"{name}: {answer.reason}")
        elif isinstance(answer, BaseException):
            raise answer
        elif not math.isfinite(answer) or answer < 0:
            values[name] = None
            missing.append(f"{name}: negative")
        else:
            values[name] = answer
    itl, ttft = values.get("itl"), values.get("ttft")
    return ServerSignals(
        kv_cache=values["kv_cache"],
        waiting=values["waiting"],
        running=values["running"],
        itl_ms=None if itl is None else itl * 1000.0,
        ttft_ms=None if ttft is None else ttft * 1000.0,
        prompt_tokens_per_second=values.get("prompt_tokens"),
        missing=tuple(missing),
    )
