"""A targeted Server's load, measured from its engines' own metrics in Prometheus (docs/design/inferno.md §13).

Two instant queries per Server, from templates (`string.Template`, so PromQL's braces need no escaping), in
the forms of the engine that serves the target (shared/engines/<engine>/series.py; vLLM's below):
- arrival rate, requests per minute: the rate of `vllm:request_success_total` (finished requests: the rate
  the replicas actually served, which is what they must keep serving);
- average length, generated tokens per request: the rate of `vllm:request_generation_tokens_sum` over that
  of its `_count`, i.e. the mean over the same window.

Both over `$window` (default 2m: at least four scrapes at Prometheus's usual 30 s, long enough that one slow
batch does not swing the decision, short enough that a step in load shows within two minutes). The
variables: `$namespace` (the Server's), `$model` (its `spec.model`), `$server` (its `spec.name`), `$target` (its
`targetRef.name`), `$window`.

Which series: vLLM labels its metrics `model_name=<served model name>`, and the served model name is the
`--model` path unless a worker sets `served-model-name` — so for the engines we render it is rarely anything a
Server knows. The chart's PodMonitor copies our pod labels onto the series instead: `modelserving="<model>-
<backend>"`, the ModelServing's name, which is what a Server targeting it names. The default queries select
on that, and fall back (`or`) to `model_name="$model"` for engines scraped some other way that serve the
Server's model under its name.

No traffic at all (a rate of 0) is a measurement: the length is then 0/0, and the last length is kept. No
series, NaN, an error or a timeout is not: the caller keeps the Server's last load and scales nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from string import Template
from typing import Final

from reconciler.inferno.prometheus import PrometheusClient, QueryFailure
from shared.engines.series import EngineSeries, default_series, engines

DEFAULT_WINDOW: Final = "2m"
# vLLM's forms; a target served by another engine reads that engine's (LoadQueries.for_engine).
DEFAULT_ARRIVAL_QUERY: Final = default_series().queries.arrival
DEFAULT_LENGTH_QUERY: Final = default_series().queries.length
VARIABLES: Final = frozenset({"namespace", "model", "server", "target", "window"})
MAX_QUERY_CHARS: Final = 4096


class LoadQueryError(ValueError):
    """A query template that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class LoadQueries:
    arrival: str = DEFAULT_ARRIVAL_QUERY
    length: str = DEFAULT_LENGTH_QUERY
    window: str = DEFAULT_WINDOW

    def __post_init__(self) -> None:
        for flag, text in (
            ("--inferno-prometheus-arrival-query", self.arrival),
            ("--inferno-prometheus-length-query", self.length),
        ):
            template = Template(text)
            if not template.is_valid():
                raise LoadQueryError(f"{flag}: not a valid template (a lone $? write $$ for a literal $)")
            unknown = set(template.get_identifiers()) - VARIABLES
            if unknown:
                raise LoadQueryError(
                    f"{flag}: unknown variable(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(VARIABLES))}"
                )
            if len(text) > MAX_QUERY_CHARS:
                raise LoadQueryError(f"{flag}: longer than {MAX_QUERY_CHARS} characters")

    def for_engine(self, series: EngineSeries) -> LoadQueries:
        """These queries for a target `series`'s engine serves: a default becomes that engine's, a query the
        user wrote stays."""
        defaults = [one.queries for one in engines().values()]
        engine = series.queries
        return LoadQueries(
            arrival=engine.arrival if any(self.arrival == d.arrival for d in defaults) else self.arrival,
            length=engine.length if any(self.length == d.length for d in defaults) else self.length,
            window=self.window,
        )

    def render(self, text: str, *, namespace: str, model: str, server: str, target: str) -> str:
        values = {
            "namespace": promql_string(namespace),
            "model": promql_string(model),
            "server": promql_string(server),
            "target": promql_string(target),
            "window": self.window,
        }
        return Template(text).substitute(values)


def promql_string(value: str) -> str:
    """`value` escaped for a PromQL double-quoted string (names come from objects anyone may write)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass(frozen=True)
class Load:
    arrival_rate: float  # requests per minute
    avg_length: int | None  # generated tokens per request; None: no traffic, keep the last length


async def measure_load(
    client: PrometheusClient, queries: LoadQueries, *, namespace: str, model: str, server: str, target: str
) -> Load:
    """Both queries, concurrently; raises QueryFailure (from either) when there is no usable number."""
    variables = {"namespace": namespace, "model": model, "server": server, "target": target}
    arrival_query = queries.render(queries.arrival, **variables)
    length_query = queries.render(queries.length, **variables)
    arrival, length = await asyncio.gather(
        client.query_number(arrival_query), client.query_number(length_query), return_exceptions=True
    )
    if isinstance(arrival, BaseException):
        raise arrival
    if arrival < 0:
        raise QueryFailure("bad_response", f"negative arrival rate {arrival:g}")
    if arrival == 0:
        return Load(arrival_rate=0.0, avg_length=None)
    if isinstance(length, BaseException):
        raise length
    if length < 0:
        raise QueryFailure("bad_response", f"negative length {length:g}")
    return Load(arrival_rate=arrival, avg_length=round(length))
