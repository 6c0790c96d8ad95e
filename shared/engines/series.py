"""An engine's Prometheus series, as Inferno reads them, and the default queries over them (docs/design/inferno.md §13).

Each engine module (shared/engines/<engine>/series.py) names the series of the release it was read from and
writes its default queries from two selectors: the engines of the ModelServing a Server targets (the labels the
chart's PodMonitor copies from our pods) and the engines that serve the Server's model under its name. The
queries are `string.Template`s over the variables of reconciler/inferno/load.py; a user's own query always wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

# What a target no engine is known for is read as: the engine Kthena renders.
DEFAULT_ENGINE: Final = "vLLM"
# The ModelServing a Server targets, as the chart's PodMonitor labels its engines (prefill pods finish no
# request of a prefill/decode pair, so load queries leave them out).
BY_TARGET: Final = 'namespace="$namespace",modelserving="$target",role!="prefill"'


@dataclass(frozen=True)
class Selectors:
    """Label matchers (no braces: an engine may add its own) that the query templates select on."""

    target: str  # the targeted ModelServing's engines
    model: str  # the engines that serve the Server's model under that name (or one role's of them)


@dataclass(frozen=True)
class Queries:
    """One engine's default query templates, one per signal Inferno reads."""

    arrival: str  # finished requests per minute
    length: str  # generated tokens per finished request
    kv_cache: str  # mean KV-cache usage over pods, 0..1
    waiting: str  # requests waiting, all pods
    running: str  # requests running, all pods
    itl: str  # mean inter-token latency, seconds
    ttft: str  # mean time to first token, seconds
    prompt_tokens: str  # prompt tokens per second


@dataclass(frozen=True)
class EngineSeries:
    """An engine's series names (what each is for -> its names, the current release's first, older after), the
    label carrying the served model name, and the queries it writes over them."""

    engine: str  # as ModelServer.spec.inferenceEngine names it
    release: str  # the release the names were read from
    model_label: str
    names: Mapping[str, tuple[str, ...]]
    write: Callable[[Selectors], Queries]

    def selectors(self, *, role: bool = False) -> Selectors:
        model = f'namespace="$namespace",{self.model_label}="$model"'
        return Selectors(target=BY_TARGET, model=f'{model},role="$role"' if role else model)

    @property
    def queries(self) -> Queries:
        return self.write(self.selectors())

    @property
    def role_queries(self) -> Queries:
        """The signal queries narrowed to one role's pods (`$role`: the scrape copies the pod's role label)."""
        return self.write(self.selectors(role=True))


def engines() -> Mapping[str, EngineSeries]:
    """Every engine's series, by the engine's name as a ModelServer's `inferenceEngine` gives it."""
    # Imported when asked: each engine module imports its types from here.
    from shared.engines.registry import ENGINES  # noqa: PLC0415

    return {engine.name: engine.series for engine in ENGINES}


def series_for(engine_name: str) -> EngineSeries | None:
    """The series of the engine `engine_name` names; None for an engine we do not know."""
    return engines().get(engine_name)


def default_series() -> EngineSeries:
    """The series of DEFAULT_ENGINE."""
    found = series_for(DEFAULT_ENGINE)
    assert found is not None
    return found
