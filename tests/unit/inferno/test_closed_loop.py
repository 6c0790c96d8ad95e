"""The pieces of Inferno's closed loop that need no server: reading a Prometheus answer (hostile ones too), the
load query templates, scale-down stabilisation, the new API fields, and the flags (docs/design/inferno.md §13)."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from reconciler.inferno.kinds import MODEL_SERVING
from reconciler.inferno.load import DEFAULT_ARRIVAL_QUERY, LoadQueries, LoadQueryError
from reconciler.inferno.mapping import optimizer_interval
from reconciler.inferno.prometheus import PrometheusSettings, PrometheusSettingsError, QueryFailure, parse_number
from reconciler.inferno.report import Series
from reconciler.inferno.rivals import _binding
from reconciler.inferno.settings import InfernoSettingsError, add_arguments, settings_from_args
from reconciler.inferno.signals import SignalQueries, SignalQueryError
from reconciler.inferno.stabilizer import Stabilizer
from reconciler.inferno.targets import Bounds
from shared.api import inferno as api


def answer(result_type: str, result: Any, *, status: str = "success") -> bytes:
    return json.dumps({"status": status, "data": {"resultType": result_type, "result": result}}).encode()


# --- Prometheus answers ----------------------------------------------------------------------------------


def test_a_vector_of_one_sample_is_its_value() -> None:
    assert parse_number(200, answer("vector", [{"metric": {}, "value": [1.5, "601.25"]}])) == 601.25


def test_a_scalar_is_its_value() -> None:
    assert parse_number(200, answer("scalar", [1.5, "3"])) == 3.0


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (200, answer("vector", []), "no_data"),
        (200, answer("vector", [{"value": [1, "NaN"]}]), "not_a_number"),
        (200, answer("vector", [{"value": [1, "+Inf"]}]), "not_a_number"),
        (200, answer("vector", [{"value": [1, "1"]}, {"value": [1, "2"]}]), "bad_response"),
        (200, answer("matrix", []), "bad_response"),
        (200, answer("vector", [{"value": [1, 2]}]), "bad_response"),
        (200, answer("vector", [{"value": [1, "twelve"]}]), "bad_response"),
        (200, b"<html>proxy</html>", "bad_response"),
        (200, b"[1, 2]", "bad_response"),
        (200, json.dumps({"status": "success"}).encode(), "bad_response"),
        (400, json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode(), "error"),
        (503, b"Service Unavailable", "error"),
    ],
)
def test_anything_but_one_finite_number_is_a_failure_with_its_reason(status: int, body: bytes, reason: str) -> None:
    with pytest.raises(QueryFailure) as caught:
        parse_number(status, body)
    assert caught.value.reason == reason


def test_a_long_error_is_clipped() -> None:
    body = json.dumps({"status": "error", "errorType": "execution", "error": "x" * 10_000}).encode()
    with pytest.raises(QueryFailure) as caught:
        parse_number(422, body)
    assert len(caught.value.message) < 500


def test_prometheus_settings_name_the_flag_at_fault(tmp_path: Any) -> None:
    with pytest.raises(PrometheusSettingsError, match="--inferno-prometheus-url"):
        PrometheusSettings(url="prometheus:9090")
    with pytest.raises(PrometheusSettingsError, match="--inferno-prometheus-ca-file"):
        PrometheusSettings(url="https://p:9090", ca_file=str(tmp_path / "missing.pem"))
    with pytest.raises(PrometheusSettingsError, match="--inferno-prometheus-timeout"):
        PrometheusSettings(url="http://p:9090", timeout=0)


# --- query templates -------------------------------------------------------------------------------------


def test_the_default_queries_read_vllm_metrics_of_the_target_else_of_the_model_in_the_namespace() -> None:
    queries = LoadQueries()
    rendered = queries.render(DEFAULT_ARRIVAL_QUERY, namespace="serving", model="llama", server="s", target="m-a")
    assert rendered == (
        '(sum(rate(vllm:request_success_total{namespace="serving",modelserving="m-a",role!="prefill"}[2m]))'
        ' or sum(rate(vllm:request_success_total{namespace="serving",model_name="llama"}[2m]))) * 60'
    )


def test_names_are_escaped_into_promql_strings() -> None:
    queries = LoadQueries()
    rendered = queries.render(queries.arrival, namespace="ns", model='a"} or vector(1e9) #\\', server="", target="")
    assert 'model_name="a\\"} or vector(1e9) #\\\\"' in rendered


@pytest.mark.parametrize(
    ("arrival", "message"),
    [("sum(rate(x{pod=\"$pod\"}[$window]))", "unknown variable(s) pod"), ("x $", "not a valid template")],
)
def test_a_bad_template_is_refused_naming_the_flag(arrival: str, message: str) -> None:
    with pytest.raises(LoadQueryError, match=re.escape(f"--inferno-prometheus-arrival-query: {message}")):
        LoadQueries(arrival=arrival)


# --- stabilisation ---------------------------------------------------------------------------------------


def test_up_at_once_down_only_to_the_highest_decision_of_the_window() -> None:
    stabilizer = Stabilizer(window=300)
    assert stabilizer.recommend(now=0, desired=5, current=2) == 5
    assert stabilizer.recommend(now=60, desired=3, current=5) == 5  # 5 was decided within the window
    assert stabilizer.recommend(now=200, desired=4, current=5) == 5
    assert stabilizer.recommend(now=301, desired=3, current=5) == 4  # the 5 at t=0 has left the window
    assert stabilizer.recommend(now=501, desired=3, current=4) == 3


def test_a_first_sight_counts_the_current_replicas_as_a_decision() -> None:
    # A new leader (empty history) in a load dip does not scale down at once.
    stabilizer = Stabilizer(window=300)
    assert stabilizer.recommend(now=0, desired=2, current=5) == 5
    assert stabilizer.recommend(now=299, desired=2, current=5) == 5
    assert stabilizer.recommend(now=301, desired=2, current=5) == 2


def test_a_flickering_decision_changes_nothing_after_the_first_rise() -> None:
    stabilizer = Stabilizer(window=10)
    current = 2
    changes = 0
    for step in range(100):
        wanted = stabilizer.recommend(now=step, desired=3 if step % 3 else 2, current=current)
        changes += wanted != current
        current = wanted
    assert (changes, current) == (1, 3)


def test_a_zero_window_follows_the_decision() -> None:
    stabilizer = Stabilizer(window=0)
    assert [stabilizer.recommend(now=t, desired=d, current=c) for t, d, c in ((0, 5, 2), (1, 3, 5), (2, 1, 3))] == [
        5, 3, 1,
    ]  # fmt: skip


def test_bounds_clamp() -> None:
    bounds = Bounds(minimum=2, maximum=5, source="Server")
    assert [bounds.clamp(n) for n in (0, 2, 4, 9)] == [2, 2, 4, 5]


# --- bindings that scale a ModelServing ------------------------------------------------------------------


def _names(spec: Any, serving: str) -> bool:
    return any(s.names(MODEL_SERVING, serving) for s in _binding({"metadata": {"name": "b"}, "spec": spec}))


def test_a_binding_names_its_target_in_either_configuration() -> None:
    homogeneous = {"scalingConfiguration": {"target": {"targetRef": {"name": "m-a"}}}}
    heterogeneous = {"optimizerConfiguration": {"params": [{"target": {"targetRef": {"kind": "ModelServing",
                                                                                        "name": "m-b"}}}]}}  # fmt: skip
    assert _names(homogeneous, "m-a")
    assert _names(heterogeneous, "m-b")
    assert not _names(homogeneous, "m-b")
    assert not _names({"scalingConfiguration": "nonsense"}, "m-a")
    assert not _names({"optimizerConfiguration": {"params": "nonsense"}}, "m-a")


# --- API fields ------------------------------------------------------------------------------------------


def server(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": api.API_VERSION, "kind": "Server", "metadata": {"name": "s"},
            "spec": {"name": "s", "class": "Premium", "model": "m", **spec}}  # fmt: skip


def test_the_reference_servers_stay_valid_and_the_new_fields_are_optional() -> None:
    assert api.Server.model_validate(server()).spec.target_ref is None
    target = {"kind": "Deployment", "name": "d"}
    fields = {"actuation": "Scale", "minReplicas": 1, "maxReplicas": 4, "scaleDownStabilization": "2m30s"}
    parsed = api.Server.model_validate(server(targetRef=target, **fields))
    assert parsed.spec.target_ref is not None
    assert (parsed.spec.target_ref.kind, parsed.spec.actuation, parsed.spec.max_replicas) == ("Deployment", "Scale", 4)


@pytest.mark.parametrize(
    "spec",
    [
        {"actuation": "Scaled"},
        {"minReplicas": 5, "maxReplicas": 2},
        {"scaleDownStabilization": "5 minutes"},
        {"scaleDownStabilization": "-5m"},
        {"targetRef": {"kind": "", "name": "x"}},
    ],
)
def test_bad_new_fields_are_refused(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        api.Server.model_validate(server(**spec))


def optimizer(**spec: Any) -> dict[str, Any]:
    flags = {"unlimited": True, "heterogeneous": False, "milpSolver": False, "useCplex": False}
    return {"apiVersion": api.API_VERSION, "kind": "Optimizer", "metadata": {"name": "o"},
            "spec": {"optimize": False, "data": {"optimizer": flags}, **spec}}  # fmt: skip


def test_an_optimizer_interval_is_a_go_duration_of_at_least_100ms() -> None:
    assert optimizer_interval(optimizer(interval="1m30s")) == 90
    assert optimizer_interval(optimizer()) is None
    assert optimizer_interval(optimizer(interval="50ms")) is None  # refused by the model, never scheduled
    with pytest.raises(ValidationError, match="shorter than 100ms"):
        api.Optimizer.model_validate(optimizer(interval="50ms"))
    with pytest.raises(ValidationError):
        api.Optimizer.model_validate(optimizer(interval="often"))


# --- flags -----------------------------------------------------------------------------------------------


def parse(*argv: str, environ: dict[str, str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ=environ or {})
    return parser.parse_args(list(argv))


def test_prometheus_flags_make_the_settings(tmp_path: Any) -> None:
    token = tmp_path / "token"
    token.write_text("secret\n")
    args = parse("--inferno-prometheus-url", "https://prom:9090", "--inferno-prometheus-bearer-token-file", str(token),
                 "--inferno-prometheus-window", "5m", "--inferno-prometheus-timeout", "3")  # fmt: skip
    settings = settings_from_args(args, environ={})
    assert settings.prometheus == PrometheusSettings(url="https://prom:9090", bearer_token_file=str(token), timeout=3)
    assert settings.load_queries.window == "5m"


def test_without_a_prometheus_url_loads_are_what_the_servers_say() -> None:
    assert settings_from_args(parse(), environ={}).prometheus is None


@pytest.mark.parametrize(
    "variable", ["MODELBOOSTER_RECONCILER_INFERNO_PROMETHEUS_URL", "MODELBOOSTER_RECONCILER_PROMETHEUS_URL"]
)
def test_the_url_can_come_from_the_environment(variable: str) -> None:
    args = parse(environ={variable: "http://prom:9090"})
    settings = settings_from_args(args, environ={})
    assert settings.prometheus is not None
    assert settings.prometheus.url == "http://prom:9090"


def test_the_prometheus_flags_of_earlier_releases_still_work() -> None:
    args = parse("--prometheus-url", "http://prom:9090", "--prometheus-window", "5m")
    settings = settings_from_args(args, environ={})
    assert settings.prometheus is not None
    assert (settings.prometheus.url, settings.load_queries.window) == ("http://prom:9090", "5m")


def test_a_bad_query_flag_is_a_settings_error() -> None:
    with pytest.raises(InfernoSettingsError, match="--inferno-prometheus-length-query"):
        settings_from_args(parse("--inferno-prometheus-length-query", "x[$windw]"), environ={})


# --- per-Server series -----------------------------------------------------------------------------------


def test_a_run_replaces_its_namespaces_series_and_a_lost_leadership_withdraws_them() -> None:
    from prometheus_client import CollectorRegistry

    from reconciler.inferno.metrics import InfernoMetrics

    registry = CollectorRegistry()
    metrics = InfernoMetrics(registry)

    def desired(namespace: str, server: str) -> float | None:
        labels = {"namespace": namespace, "server": server, "target_kind": "", "target_name": "", "accelerator": "G2"}
        return registry.get_sample_value("inferno_desired_replicas", labels)

    def run(namespace: str, *servers: str) -> None:
        series: Series = set()
        for server in servers:
            labels = (namespace, server, "", "", "G2")
            metrics.desired_replicas.labels(*labels).set(2)
            series.add((metrics.desired_replicas, labels))
        metrics.publish_servers(namespace, series)

    run("a", "s1", "s2")
    run("b", "s3")
    run("a", "s1")  # s2 deleted
    assert (desired("a", "s1"), desired("a", "s2"), desired("b", "s3")) == (2, None, 2)
    metrics.withdraw_servers()
    assert (desired("a", "s1"), desired("b", "s3")) == (None, None)


# --- credentials ------------------------------------------------------------------------------------------


def test_credentials_are_sent_only_over_https(tmp_path: Any) -> None:
    token = tmp_path / "token"
    token.write_text("secret")
    given = r"credentials \(--inferno-prometheus-bearer-token-file\) are sent only"
    with pytest.raises(PrometheusSettingsError, match=given):
        PrometheusSettings(url="http://prometheus:9090", bearer_token_file=str(token))
    with pytest.raises(PrometheusSettingsError, match=r"credentials \(user:password\)") as caught:
        PrometheusSettings(url="http://admin:hunter2@prometheus:9090")
    assert "hunter2" not in str(caught.value)
    assert PrometheusSettings(url="https://prometheus:9090", bearer_token_file=str(token)).bearer_token_file


def test_the_url_is_shown_without_user_and_password() -> None:
    settings = PrometheusSettings(url="https://admin:hunter2@prometheus:9090/prom")
    assert settings.display_url == "https://***@prometheus:9090/prom"
    assert PrometheusSettings(url="https://prometheus:9090").display_url == "https://prometheus:9090"
    failure = "Cannot connect to https://admin:hunter2@prometheus:9090/prom/api/v1/query"
    assert settings.redact(failure) == "Cannot connect to https://***@prometheus:9090/prom/api/v1/query"


def test_the_token_flag_does_not_suggest_the_reconcilers_own_token() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ={})
    (action,) = [a for a in parser._actions if "--inferno-prometheus-bearer-token-file" in a.option_strings]
    assert "serviceaccount/token" not in (action.help or "")
    assert "never the reconciler's ServiceAccount token" in (action.help or "")


@pytest.mark.parametrize(
    ("field", "flag"),
    [
        ("kv_cache", "--inferno-prometheus-kv-cache-query"),
        ("prompt_tokens", "--inferno-prometheus-prompt-tokens-query"),
    ],
)
def test_a_bad_signal_template_is_refused_naming_its_flag(field: str, flag: str) -> None:
    with pytest.raises(SignalQueryError, match=re.escape(f"{flag}: unknown variable(s) pod; known: ")):
        SignalQueries(**{field: 'avg(x{pod="$pod"})'})


def test_the_signal_query_flags_reach_the_settings() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ={})
    query = 'avg(my_kv{namespace="$namespace",role="$role"})'
    settings = settings_from_args(parser.parse_args([f"--inferno-prometheus-kv-cache-query={query}"]), environ={})
    assert settings.signal_queries is not None
    assert settings.signal_queries.kv_cache == query
    assert settings.signal_queries.for_role().kv_cache == query  # the user's query is theirs to narrow
    message = "--inferno-prometheus-waiting-query: not a valid template"
    with pytest.raises(InfernoSettingsError, match=re.escape(message)):
        settings_from_args(parser.parse_args(["--inferno-prometheus-waiting-query=x $"]), environ={})
