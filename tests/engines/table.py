"""What a fake engine exports: one table per engine release (tests/engines/<engine>_<version>.py), written from
that release's source, and the Prometheus text a fake pod serves from it.

A table lists the series Inferno and the chart's dashboard read, each with the labels the engine itself puts on
it (besides the served model's, which the pod fills in) and what it measures (`Measure`), in the engine's own
units. A rename in an engine's next release is one line of its table, and the real-Prometheus tests that read
through the controller's default queries fail until the queries follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Final


class Measure(Enum):
    """What a series counts. Counters and histograms accumulate; gauges are the last value."""

    FINISHED_REQUESTS = "finished requests"  # counter
    GENERATED_TOKENS = "generated tokens"  # counter
    PROMPT_TOKENS = "prompt tokens"  # counter
    GENERATED_PER_REQUEST = "generated tokens per finished request"  # histogram: sum tokens, count requests
    ITL = "inter-token latency, seconds"  # histogram: one observation per generated token
    TTFT = "time to first token, seconds"  # histogram: one observation per request
    E2E = "end-to-end latency, seconds"  # histogram: one observation per request
    KV_CACHE = "KV-cache usage, 0..1"  # gauge
    WAITING = "requests waiting"  # gauge
    DEFERRED = "requests waiting on a transient constraint (a LoRA budget, a KV transfer)"  # gauge
    WAITING_FOR_CAPACITY = "requests waiting for scheduling capacity: the waiting less the deferred"  # gauge
    RUNNING = "requests running"  # gauge


COUNTER: Final = "counter"
GAUGE: Final = "gauge"
HISTOGRAM: Final = "histogram"


@dataclass(frozen=True)
class Series:
    name: str  # as exported: a counter with its `_total`, a histogram without its `_bucket`/`_sum`/`_count`
    kind: str  # COUNTER, GAUGE or HISTOGRAM
    measure: Measure
    labels: Mapping[str, str] = field(default_factory=dict)  # the engine's own, with the values a lone pod has
    # A gauge the engine also breaks down by this label when asked (SGLang's priority scheduling): the total
    # then carries it empty, each part its value.
    breakdown: str | None = None


def series(text: str) -> tuple[Series, ...]:
    """A table's series from its text: one per line, `name kind measure [label=value ...] [breakdown:label]`, the
    measure by its Measure member's name; blank lines and `#` comments skipped."""
    found = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        name, kind, measure, *rest = words
        assert kind in (COUNTER, GAUGE, HISTOGRAM), line
        labels = dict(word.split("=", 1) for word in rest if "=" in word)
        breakdown = next((word.removeprefix("breakdown:") for word in rest if word.startswith("breakdown:")), None)
        found.append(Series(name, kind, Measure[measure], labels, breakdown))
    return tuple(found)


@dataclass(frozen=True)
class EngineTable:
    engine: str  # as a ModelServer's inferenceEngine names it
    version: str  # the release the table was read from
    source: str  # where in that release
    model_label: str  # the label carrying the served model name
    series: tuple[Series, ...]

    def names(self) -> frozenset[str]:
        """Every series name as exported, histograms by their `_sum`/`_count`/`_bucket`."""
        exported: set[str] = set()
        for one in self.series:
            if one.kind == HISTOGRAM:
                exported |= {f"{one.name}_sum", f"{one.name}_count", f"{one.name}_bucket"}
            else:
                exported.add(one.name)
        return frozenset(exported)


@dataclass
class PodState:
    """One pod's totals and gauges, in the units of Measure."""

    finished: float = 0.0
    generated: float = 0.0
    prompt: float = 0.0
    itl_seconds: float = 0.0  # sum of the ITL observations
    ttft_seconds: float = 0.0
    e2e_seconds: float = 0.0
    kv_cache: float = 0.0
    waiting: float = 0.0
    deferred: float = 0.0  # of the waiting
    running: float = 0.0


def _value(measure: Measure, state: PodState) -> tuple[float, float]:
    """(the counter's or gauge's value, or a histogram's sum; a histogram's count)."""
    return {
        Measure.FINISHED_REQUESTS: (state.finished, 0.0),
        Measure.GENERATED_TOKENS: (state.generated, 0.0),
        Measure.PROMPT_TOKENS: (state.prompt, 0.0),
        Measure.GENERATED_PER_REQUEST: (state.generated, state.finished),
        Measure.ITL: (state.itl_seconds, state.generated),
        Measure.TTFT: (state.ttft_seconds, state.finished),
        Measure.E2E: (state.e2e_seconds, state.finished),
        Measure.KV_CACHE: (state.kv_cache, 0.0),
        Measure.WAITING: (state.waiting, 0.0),
        Measure.DEFERRED: (state.deferred, 0.0),
        Measure.WAITING_FOR_CAPACITY: (state.waiting - state.deferred, 0.0),
        Measure.RUNNING: (state.running, 0.0),
    }[measure]


def _labels(table: EngineTable, one: Series, model: str, extra: Mapping[str, str]) -> str:
    labels = {table.model_label: model, **one.labels, **extra}
    return ",".join(f'{key}="{value}"' for key, value in labels.items())


def exposition(
    table: EngineTable, state: PodState, *, model: str, extra: Mapping[str, str] | None = None,
    shares: Mapping[str, float] | None = None,
) -> str:  # fmt: skip
    """The Prometheus text one pod of `table`'s engine serves, from `state` (a histogram as one +Inf bucket);
    `shares`: the parts of each gauge with a breakdown, by the breakdown label's value."""
    lines: list[str] = []
    for one in table.series:
        value, count = _value(one.measure, state)
        labels = _labels(table, one, model, extra or {})
        lines.append(f"# TYPE {one.name} {one.kind}")  # the text format's family name: a counter's with _total
        if one.breakdown is not None and shares:
            lines.append(f'{one.name}{{{labels},{one.breakdown}=""}} {value!r}')
            lines += [f'{one.name}{{{labels},{one.breakdown}="{part}"}} {value * share!r}'
                      for part, share in shares.items()]  # fmt: skip
        elif one.kind in (COUNTER, GAUGE):
            lines.append(f"{one.name}{{{labels}}} {value!r}")
        else:
            lines.append(f'{one.name}_bucket{{{labels},le="+Inf"}} {count!r}')
            lines.append(f"{one.name}_sum{{{labels}}} {value!r}")
            lines.append(f"{one.name}_count{{{labels}}} {count!r}")
    return "\n".join(lines) + "\n"
