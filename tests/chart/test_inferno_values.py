"""The chart's Inferno values reach the reconciler as its flags say (docs/inferno.md, docs/design/inferno.md §18):
the operator's ceilings, every `--inferno-prometheus-*` flag, the token and CA mounted from Secrets where the
flags point, no token over plain http, and the engines' PodMonitor only when asked."""

from __future__ import annotations

import argparse
from pathlib import PurePosixPath
from typing import Any

import helm_python as helm
import pytest
import yaml

from modelbooster.cli import build_parser
from reconciler.inferno.ceilings import Ceilings
from reconciler.inferno.load import DEFAULT_WINDOW
from reconciler.inferno.prometheus import DEFAULT_TIMEOUT
from reconciler.inferno.settings import add_arguments
from shared.durations import parse_duration
from tests.chart.render import Rendered, container_args, flag_value, render
from tests.chart.scenarios import SCENARIOS


def _reconciler_args(rendered: Rendered) -> list[str]:
    return container_args(rendered.deployment("reconciler"), "reconciler")


def test_the_chart_defaults_are_the_code_defaults(defaults: Rendered) -> None:
    args = build_parser().parse_args(_reconciler_args(defaults))
    code = Ceilings()
    assert (args.inferno_max_replicas, args.inferno_min_replicas, args.inferno_max_scale_step,
            args.inferno_max_scale_step_percent) == (code.max_replicas, code.min_replicas, code.max_step,
                                                     code.max_step_percent)  # fmt: skip
    assert parse_duration(args.inferno_min_stabilization) / 1e9 == code.min_stabilization
    assert args.prometheus_url is None  # no Prometheus unless given
    assert not defaults.of_kind("PodMonitor")


def test_every_prometheus_flag_has_a_value(rendered_scenarios: dict[str, Rendered]) -> None:
    rendered = rendered_scenarios["inferno-closed-loop"]
    args = _reconciler_args(rendered)
    values: dict[str, Any] = SCENARIOS["inferno-closed-loop"]["inferno"]
    prometheus = values["prometheus"]
    expected = {
        "--inferno-prometheus-url": prometheus["url"],
        "--inferno-prometheus-timeout": str(prometheus["timeout"]),
        "--inferno-prometheus-window": prometheus["window"],
        "--inferno-prometheus-arrival-query": prometheus["arrivalQuery"],
        "--inferno-prometheus-kv-cache-query": prometheus["signalQueries"]["kvCache"],
        "--inferno-prometheus-bearer-token-file": "/var/run/secrets/modelbooster/prometheus-token/token",
        "--inferno-prometheus-ca-file": "/var/run/secrets/modelbooster/prometheus-ca/ca.crt",
        "--inferno-namespaces": "serving,research",
        "--inferno-max-replicas": "40",
        "--inferno-min-replicas": "0",
        "--inferno-max-scale-step": "2",
        "--inferno-max-scale-step-percent": "50",
        "--inferno-min-stabilization": "3m",
    }
    assert {flag: flag_value(args, flag) for flag in expected} == expected
    built_in = {f"--inferno-prometheus-{query}-query"
                for query in ("length", "waiting", "running", "itl", "ttft", "prompt-tokens")}  # fmt: skip
    assert {flag: flag_value(args, flag) for flag in built_in} == dict.fromkeys(built_in)  # empty: built-in
    parsed = build_parser().parse_args(args)
    assert parsed.prometheus_arrival_query == prometheus["arrivalQuery"]  # `$` and braces arrive intact
    assert parsed.prometheus_kv_cache_query == prometheus["signalQueries"]["kvCache"]
    # Every --inferno-prometheus-* flag of the reconciler is one the chart can set.
    inferno_flags = argparse.ArgumentParser()
    add_arguments(inferno_flags, environ={})
    flags = {option for action in inferno_flags._actions for option in action.option_strings}
    assert {flag for flag in flags if flag.startswith("--inferno-prometheus-")} == {
        flag for flag in expected if flag.startswith("--inferno-prometheus-")
    } | built_in


def test_the_token_and_the_ca_are_mounted_from_secrets_where_the_flags_point(
    rendered_scenarios: dict[str, Rendered],
) -> None:
    rendered = rendered_scenarios["inferno-closed-loop"]
    pod = rendered.deployment("reconciler")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["name"]: mount for mount in container["volumeMounts"]}
    for flag, volume, secret, key in (
        ("--inferno-prometheus-bearer-token-file", "prometheus-token", "inferno-prometheus", "token"),
        ("--inferno-prometheus-ca-file", "prometheus-ca", "prometheus-ca", "ca.crt"),
    ):
        path = PurePosixPath(flag_value(container["args"], flag) or "")
        assert volumes[volume]["secret"] == {"secretName": secret, "items": [{"key": key, "path": key}]}
        assert mounts[volume]["readOnly"] is True
        assert path == PurePosixPath(mounts[volume]["mountPath"]) / key


def test_a_token_is_never_sent_over_plain_http() -> None:
    values = {"inferno": {"prometheus": {"url": "http://prometheus:9090",
                                         "bearerTokenSecret": {"name": "t", "key": "token"}}}}  # fmt: skip
    with pytest.raises(helm.HelmError, match=r"needs an https:// inferno\.prometheus\.url"):
        render(values)
    # Without a token, http is fine; the defaults of timeout and window are the code's.
    args = _reconciler_args(render({"inferno": {"prometheus": {"url": "http://prometheus:9090"}}}))
    assert flag_value(args, "--inferno-prometheus-timeout") == f"{DEFAULT_TIMEOUT:g}"
    assert flag_value(args, "--inferno-prometheus-window") == DEFAULT_WINDOW
    assert flag_value(args, "--inferno-prometheus-bearer-token-file") is None


def test_the_engine_pod_monitor_selects_our_engines_in_the_inferno_namespaces(
    rendered_scenarios: dict[str, Rendered],
) -> None:
    (monitor,) = rendered_scenarios["inferno-closed-loop"].of_kind("PodMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["serving", "research"]}
    assert monitor["spec"]["selector"] == {
        "matchLabels": {"workload.serving.volcano.sh/managed-by": "workload.serving.volcano.sh"}
    }
    # vLLM's port, then SGLang's, with the same rules but the port.
    vllm, sglang = monitor["spec"]["podMetricsEndpoints"]
    addresses = [r["replacement"] for r in vllm["relabelings"] if r.get("targetLabel") == "__address__"]
    assert addresses == ["${1}:8080", "[${1}]:8080"]
    assert yaml.safe_dump(sglang).replace(":30000", ":8080") == yaml.safe_dump(vllm)
    for ports, wanted in (({"sglangPort": 0}, [8000]), ({"enginePort": 30000}, [30000]), ({}, [8000, 30000])):
        (one,) = render({"inferno": {"podMonitor": {"enabled": True, **ports}}}).of_kind("PodMonitor")
        seen = [r["replacement"] for e in one["spec"]["podMetricsEndpoints"] for r in e["relabelings"]
                if r.get("targetLabel") == "__address__" and r["replacement"].startswith("$")]  # fmt: skip
        assert seen == [f"${{1}}:{port}" for port in wanted], ports
    (everywhere,) = render({"inferno": {"podMonitor": {"enabled": True}}}).of_kind("PodMonitor")
    assert everywhere["spec"]["namespaceSelector"] == {"any": True}
    assert not render({"inferno": {"enabled": False, "podMonitor": {"enabled": True}}}).of_kind("PodMonitor")
