"""Each engine's default queries read the series its release exports (shared/engines/, tests/engines/).

The tables in tests/engines/ are written from each engine's source; the queries from shared/engines/. Every
series a default query names must be one a table exports, and every query must find its signal in each table
of its engine alone (vLLM 0.33.0's, and the pre-0.11 names'): a rename in a table fails here first.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Final

import pytest

from reconciler.inferno.load import LoadQueries
from reconciler.inferno.signals import SignalQueries
from shared.engines.series import EngineSeries, default_series, series_for
from shared.engines.sglang.series import SGLANG
from shared.engines.vllm.series import VLLM
from tests.engines import sglang_0_5_23, vllm_0_33_0, vllm_pre_0_11
from tests.engines.table import EngineTable

SERIES_NAME: Final = re.compile(r"\b[a-z]+:[a-zA-Z0-9_:]+")
TABLES: Final[dict[str, tuple[EngineTable, ...]]] = {
    "vLLM": (vllm_0_33_0.TABLE, vllm_pre_0_11.TABLE),
    "SGLang": (sglang_0_5_23.TABLE,),
}


def queries_of(series: EngineSeries) -> dict[str, str]:
    return {**dataclasses.asdict(series.queries), **{f"role {k}": v for k, v in
                                                     dataclasses.asdict(series.role_queries).items()}}  # fmt: skip


@pytest.mark.parametrize("series", [VLLM, SGLANG], ids=lambda s: s.engine)
def test_every_series_a_default_query_reads_is_one_its_engine_exports(series: EngineSeries) -> None:
    tables = TABLES[series.engine]
    exported = frozenset().union(*(table.names() for table in tables))
    for signal, query in queries_of(series).items():
        named = set(SERIES_NAME.findall(query))
        assert named, (signal, query)
        assert named <= exported, f"{series.engine} {signal} reads {sorted(named - exported)}, which no table exports"
        for table in tables:
            assert named & table.names(), f"{signal} finds nothing in {table.engine} {table.version}: {query}"


@pytest.mark.parametrize("series", [VLLM, SGLANG], ids=lambda s: s.engine)
def test_the_tables_say_the_release_the_queries_were_written_for(series: EngineSeries) -> None:
    assert series.release == TABLES[series.engine][0].version
    assert series.model_label == TABLES[series.engine][0].model_label


def test_engines_are_chosen_by_the_name_a_model_server_gives_them() -> None:
    assert series_for("vLLM") is VLLM
    assert series_for("SGLang") is SGLANG
    assert series_for("MindIE") is None
    assert default_series() is VLLM


def test_a_default_becomes_the_engines_and_a_users_query_stays() -> None:
    mine = 'sum(rate(my_requests_total{namespace="$namespace"}[$window])) * 60'
    load = LoadQueries(arrival=mine, window="1m").for_engine(SGLANG)
    assert (load.arrival, load.length, load.window) == (mine, SGLANG.queries.length, "1m")
    signals = SignalQueries(itl="my_itl", window="1m").for_engine(SGLANG)
    assert signals.itl == "my_itl"
    assert signals.kv_cache == 'avg(sglang:token_usage{namespace="$namespace",model_name="$model"})'
    assert signals.waiting == 'sum(sglang:num_queue_reqs{namespace="$namespace",model_name="$model",priority=""})'
    assert SignalQueries().for_engine(VLLM) == SignalQueries()


def test_a_role_narrows_the_engines_defaults() -> None:
    narrowed = SignalQueries(ttft="my_ttft").for_engine(SGLANG).for_role(SGLANG)
    assert narrowed.ttft == "my_ttft"
    assert narrowed.kv_cache == 'avg(sglang:token_usage{namespace="$namespace",model_name="$model",role="$role"})'
    assert SignalQueries().for_role() == SignalQueries().for_role(VLLM)
    assert 'vllm:num_requests_waiting{namespace="$namespace",model_name="$model",role="$role"}' in (
        SignalQueries().for_role().waiting
    )


def test_vllm_itl_reads_both_names_per_pod() -> None:
    itl = VLLM.queries.itl
    assert "rate(vllm:inter_token_latency_seconds_sum" in itl
    assert "or rate(vllm:time_per_output_token_seconds_sum" in itl
    assert itl.count(" or ") == 2  # the sum and the count each read both names, per pod


def test_resolving_twice_gives_the_last_engines_defaults() -> None:
    assert LoadQueries().for_engine(SGLANG).for_engine(VLLM) == LoadQueries()
    assert SignalQueries().for_engine(SGLANG).for_engine(VLLM) == SignalQueries()
