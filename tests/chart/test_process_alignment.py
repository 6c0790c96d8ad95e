"""The chart and the processes agree: every container argument parses with the real command line, and the
ports, paths, ConfigMap keys and Secret layout the chart assumes are the ones the code uses."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from pathlib import PurePosixPath
from typing import Any

import pytest

from modelbooster.cli import build_parser
from tests.chart.render import NAMESPACE, Rendered, container_args, render
from tests.chart.scenarios import SCENARIOS

P = "mb-modelbooster"


def _parse(args: list[str]) -> argparse.Namespace:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            return build_parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"`modelbooster {' '.join(args)}` is refused: {stderr.getvalue().strip()}")


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The processes read MODELBOOSTER_* variables as defaults; the chart's arguments alone must be complete.
    for name in list(os.environ):
        if name.startswith("MODELBOOSTER_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_container_command_line_is_accepted(rendered_scenarios: dict[str, Rendered], scenario: str) -> None:
    for deployment in rendered_scenarios[scenario].of_kind("Deployment"):
        args = container_args(deployment, _container(deployment)["name"])
        parsed = _parse(args)
        assert parsed.command == _container(deployment)["name"]
        assert getattr(parsed, "_missing", None) is None, f"{parsed.command} is not installed"


def test_webhook_listens_where_the_chart_points(defaults: Rendered) -> None:
    from webhook.app import MUTATE_PATH, VALIDATE_PATH

    deployment = defaults.deployment("webhook")
    container = _container(deployment)
    parsed = _parse(container_args(deployment, "webhook"))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert parsed.port == ports["https"]
    assert parsed.metrics_port == ports["metrics"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in (parsed.tls_cert_file, parsed.tls_private_key_file):
        mount = mounts[str(PurePosixPath(path).parent)]
        volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
        assert volume["secret"]["secretName"] == f"{P}-webhook-tls"
    # The Secret keys the certs package writes (and cert-manager too).
    from certs.secret import TLS_CRT, TLS_KEY

    assert (PurePosixPath(parsed.tls_cert_file).name, PurePosixPath(parsed.tls_private_key_file).name) == (
        TLS_CRT,
        TLS_KEY,
    )
    paths = {
        configuration["kind"]: configuration["webhooks"][0]["clientConfig"]["service"]["path"]
        for configuration in defaults.armed()
    }
    assert paths == {"MutatingWebhookConfiguration": MUTATE_PATH, "ValidatingWebhookConfiguration": VALIDATE_PATH}


def test_reconciler_settings_match_the_chart(rendered_scenarios: dict[str, Rendered]) -> None:
    defaults = rendered_scenarios["defaults"]
    deployment = defaults.deployment("reconciler")
    parsed = _parse(container_args(deployment, "reconciler"))
    assert parsed.leader_elect is True
    assert parsed.lease_namespace == NAMESPACE
    assert parsed.config_map == f"{P}-reconciler"
    assert parsed.metrics_port == {p["name"]: p["containerPort"] for p in _container(deployment)["ports"]}["metrics"]
    assert parsed.namespaces == ()
    restricted = rendered_scenarios["namespaces"].deployment("reconciler")
    assert _parse(container_args(restricted, "reconciler")).namespaces == ("team-a", "team-b")


def test_extra_args_in_the_spelling_of_earlier_releases_still_override_the_charts() -> None:
    # An upgrade keeps a release's reconciler.extraArgs: `--workers` there still wins over the chart's own
    # `--modelbooster-workers`, as it won over the chart's `--workers` before the rename.
    values = {"reconciler": {"extraArgs": ["--workers=9", "--prometheus-window=5m"]}}
    args = container_args(render(values).deployment("reconciler"), "reconciler")
    assert "--modelbooster-workers=5" in args
    parsed = _parse(args)
    assert (parsed.workers, parsed.prometheus_window) == (9, "5m")


def test_settings_config_map_uses_the_reconciler_keys_and_defaults(defaults: Rendered) -> None:
    from reconciler.modelbooster.settings import (
        KEY_DOWNLOADER_IMAGE,
        KEY_ENGINE_ENV,
        KEY_RUNTIME_IMAGE,
        KEY_SGLANG_IMAGE,
        parse_engine_env,
    )
    from reconciler.modelbooster.synthesis.settings import (
        DEFAULT_DOWNLOADER_IMAGE,
        DEFAULT_ENGINE_ENV,
        DEFAULT_RUNTIME_IMAGE,
        DEFAULT_SGLANG_IMAGE,
    )

    data = defaults.one("ConfigMap", f"{P}-reconciler")["data"]
    assert set(data) == {KEY_RUNTIME_IMAGE, KEY_DOWNLOADER_IMAGE, KEY_ENGINE_ENV, KEY_SGLANG_IMAGE}
    assert data[KEY_SGLANG_IMAGE] == DEFAULT_SGLANG_IMAGE
    # The chart's defaults are the code's defaults, so installing the chart changes nothing by itself.
    assert data[KEY_RUNTIME_IMAGE] == DEFAULT_RUNTIME_IMAGE
    assert data[KEY_DOWNLOADER_IMAGE] == DEFAULT_DOWNLOADER_IMAGE
    assert [dict(e) for e in parse_engine_env(data[KEY_ENGINE_ENV])] == [dict(e) for e in DEFAULT_ENGINE_ENV]
    assert json.loads(data[KEY_ENGINE_ENV])[0]["name"] == "REDIS_HOST"
