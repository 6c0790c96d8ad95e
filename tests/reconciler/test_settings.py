"""Settings: flags, MODELBOOSTER_RECONCILER_* variables, the settings ConfigMap (watched)."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

import pytest

from reconciler.assembly import ReconcilerSettings
from reconciler.inferno.wiring import PEER as INFERNO
from reconciler.main import add_arguments, settings_from_args
from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVER, MODEL_SERVING
from reconciler.modelbooster.settings import DynamicSettings, SettingsError, parse_engine_env
from reconciler.modelbooster.synthesis import SynthesisSettings
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.runtime.kinds import CONFIG_MAP
from reconciler.settings import ProcessSettings
from shared.rollout import ANNOTATION_ROLLOUT
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually, quiet


def parse(argv: list[str], environ: dict[str, str] | None = None) -> ReconcilerSettings:
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ=environ or {})
    return settings_from_args(parser.parse_args(argv), environ=environ or {})


def test_defaults() -> None:
    settings = parse([])
    assert settings.of(MODELBOOSTER).workers == 5
    assert settings.process.leader_elect is True
    assert settings.process.namespaces == ()
    assert settings.process.metrics_port == 8080
    assert settings.process.field_manager == "modelbooster"
    lease = settings.process.lease
    assert (lease.lease_duration, lease.renew_deadline, lease.retry_period) == (15, 10, 2)
    assert settings.process.controller_namespace == "default"


def test_flags_the_chart_passes() -> None:
    settings = parse(["--modelbooster-workers=8", "--namespaces=a, b", "--modelbooster-runtime-image=r:1",
                      "--modelbooster-downloader-image=d:1", "--modelbooster-config-map=cm", "--leader-elect",
                      "--lease-name=l", "--lease-namespace=sys", "--metrics-port=9090", "--log-level=debug",
                      "--log-format=json"])  # fmt: skip
    assert settings.of(MODELBOOSTER).workers == 8
    assert settings.process.namespaces == ("a", "b")
    assert (settings.of(MODELBOOSTER).runtime_image, settings.of(MODELBOOSTER).downloader_image) == ("r:1", "d:1")
    assert settings.of(MODELBOOSTER).config_map == "cm"
    assert settings.process.effective_lease_namespace == "sys"
    assert (settings.process.log_level, settings.process.log_format) == ("debug", "json")
    assert parse(["--no-leader-elect"]).process.leader_elect is False


def test_environment_variables_set_defaults_and_flags_win() -> None:
    environ = {"MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS": "12", "MODELBOOSTER_RECONCILER_LEADER_ELECT": "false",
               "POD_NAMESPACE": "mb-system", "POD_NAME": "mb-0"}  # fmt: skip
    settings = parse([], environ)
    assert settings.of(MODELBOOSTER).workers == 12
    assert settings.process.leader_elect is False
    assert settings.process.controller_namespace == "mb-system"
    assert settings.process.identity.startswith("mb-0_")
    assert parse(["--modelbooster-workers", "3"], environ).of(MODELBOOSTER).workers == 3


@pytest.mark.parametrize(
    ("argv", "environ"),
    [
        (["--workers=7", "--runtime-image=r:7", "--downloader-image=d:7", "--config-map=cm7", "--lora-timeout=7"], {}),
        ([], {f"MODELBOOSTER_RECONCILER_{name}": value for name, value in (
            ("WORKERS", "7"), ("RUNTIME_IMAGE", "r:7"), ("DOWNLOADER_IMAGE", "d:7"), ("CONFIG_MAP", "cm7"),
            ("LORA_TIMEOUT", "7"))}),
    ],
    ids=["flags", "variables"],
)  # fmt: skip
def test_the_unprefixed_spellings_of_earlier_releases_still_work(argv: list[str], environ: dict[str, str]) -> None:
    settings = parse(argv, environ).of(MODELBOOSTER)
    assert (settings.workers, settings.runtime_image, settings.downloader_image) == (7, "r:7", "d:7")
    assert (settings.config_map, settings.lora_timeout) == ("cm7", 7.0)


def test_a_flag_in_either_spelling_wins_over_a_variable_in_either() -> None:
    assert parse(["--workers=3"], {"MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS": "9"}).of(MODELBOOSTER).workers == 3
    assert parse(["--modelbooster-workers=3"], {"MODELBOOSTER_RECONCILER_WORKERS": "9"}).of(MODELBOOSTER).workers == 3


def test_the_spellings_are_one_flag_whose_last_value_wins() -> None:
    # As for one spelling given twice: the chart's reconciler.extraArgs come after its own arguments and override
    # them, in the old spelling as in the new.
    assert parse(["--modelbooster-workers=5", "--workers=8"]).of(MODELBOOSTER).workers == 8
    assert parse(["--workers=8", "--modelbooster-workers=5"]).of(MODELBOOSTER).workers == 5
    assert parse(["--inferno-prometheus-window=1m", "--prometheus-window=3m"]).of(INFERNO).load_queries.window == "3m"


def test_both_variables_agreeing_are_accepted_and_disagreeing_refused(capsys: pytest.CaptureFixture[str]) -> None:
    both = {"MODELBOOSTER_RECONCILER_WORKERS": "4", "MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS": "4"}
    assert parse([], both).of(MODELBOOSTER).workers == 4
    with pytest.raises(SystemExit):  # variables have no order to pick by
        parse([], {**both, "MODELBOOSTER_RECONCILER_WORKERS": "3"})
    assert (
        "environment variables MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS and MODELBOOSTER_RECONCILER_WORKERS "
        "give --modelbooster-workers different values; set one"
    ) in capsys.readouterr().err


def test_help_names_the_variable_that_set_a_default() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ={"MODELBOOSTER_RECONCILER_WORKERS": "8"})
    (action,) = [action for action in parser._actions if "--workers" in action.option_strings]
    assert action.option_strings == ["--modelbooster-workers", "--workers"]  # --help shows the new name first
    assert "(default: 8, from MODELBOOSTER_RECONCILER_WORKERS) [env MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS]" in (
        action.help or ""
    )


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (["--workers", "0"], {}, "argument --modelbooster-workers/--workers: '0': must be at least 1"),
        ([], {"MODELBOOSTER_RECONCILER_WORKERS": "0"}, "MODELBOOSTER_RECONCILER_WORKERS: '0': must be at least 1"),
        (["--log-format", "xml"], {}, "must be one of text, json"),
        ([], {"MODELBOOSTER_RECONCILER_QPS": "fast"}, "variable MODELBOOSTER_RECONCILER_QPS: 'fast': not a number"),
    ],
)
def test_bad_values_are_named(
    argv: list[str], environ: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse(argv, environ)
    assert message in capsys.readouterr().err


def test_inconsistent_lease_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        parse(["--lease-duration", "5", "--renew-deadline", "10"])


def test_settings_validate_themselves() -> None:
    with pytest.raises(SettingsError, match="--burst must be at least 1"):
        ProcessSettings(qps=5, burst=0)


def test_dynamic_settings_overlay_and_fall_back() -> None:
    dynamic = DynamicSettings(SynthesisSettings(runtime_image="flag:1", downloader_image="flagd:1"))
    assert dynamic.update({"model_serving_runtime_image": "cm:2"}) is True
    assert dynamic.current.runtime_image == "cm:2"
    assert dynamic.current.downloader_image == "flagd:1"
    assert dynamic.update({"model_serving_runtime_image": "cm:2"}) is False  # unchanged: nothing to do
    assert dynamic.update(None) is True  # ConfigMap deleted: back to the flags
    assert dynamic.current.runtime_image == "flag:1"


def test_a_bad_config_map_value_keeps_the_previous_settings() -> None:
    dynamic = DynamicSettings(SynthesisSettings())
    dynamic.update({"engine_env.json": '[{"name": "A", "value": "1"}]'})
    assert dynamic.current.engine_env == ({"name": "A", "value": "1"},)
    assert dynamic.update({"engine_env.json": "{not json"}) is False
    assert dynamic.error is not None
    assert "engine_env.json: not JSON" in dynamic.error
    assert dynamic.current.engine_env == ({"name": "A", "value": "1"},)


def test_engine_env_must_be_a_list_of_named_entries() -> None:
    with pytest.raises(SettingsError, match=r"engine_env.json\[1\]: must be an EnvVar object"):
        parse_engine_env('[{"name": "A"}, {"value": "x"}]')


async def test_a_config_map_change_restarts_no_pod_until_a_rollout_is_asked_for(
    cluster: Cluster, start_reconciler: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    """A new runtime image in the settings changes the rendering, not the ModelBooster: the ModelServing keeps
    its pod template (an older rendering, counted) until its owner asks for the current one
    (docs/design/reconciler.md §16); the other children are not touched either."""
    settings_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "mb-settings", "namespace": "default"},
        "data": {"model_serving_runtime_image": "example/runtime:v2"},
    }
    await cluster.client.create(CONFIG_MAP, settings_map)
    reconciler = await start_reconciler(config_map="mb-settings")
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    assert _runtime_image(cluster) == "example/runtime:v2"
    assert cluster.condition("m", "UpToDate") == "True"
    server_rv = (cluster.get(MODEL_SERVER, "m-a") or {})["metadata"]["resourceVersion"]
    serving_rv = (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"]

    await cluster.client.patch(CONFIG_MAP, "default", "mb-settings",
                               {"data": {"model_serving_runtime_image": "example/runtime:v3"}})  # fmt: skip
    await eventually(lambda: cluster.condition("m", "UpToDate") == "False", message="an older rendering counted")
    assert "1 of 1 ModelServing runs an older rendering" in cluster.conditions()["UpToDate"]["message"]
    assert reconciler.metric("modelbooster_servings_older_rendering", namespace="ns") == 1
    await quiet(0.3)
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["metadata"]["resourceVersion"] == serving_rv
    assert _runtime_image(cluster) == "example/runtime:v2"

    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"annotations": {ANNOTATION_ROLLOUT: "now"}}})
    await eventually(lambda: _runtime_image(cluster) == "example/runtime:v3", message="re-rendered")
    await eventually(lambda: cluster.condition("m", "UpToDate") == "True")
    await quiet(0.3)
    assert (cluster.get(MODEL_SERVER, "m-a") or {})["metadata"]["resourceVersion"] == server_rv
    assert [e.resource for e in reconciler.writes() if e.verb == "patch"].count("modelservings") == 1
    assert reconciler.metric("modelbooster_servings_older_rendering", namespace="ns") == 0


def _runtime_image(cluster: Cluster) -> str | None:
    serving = cluster.get(MODEL_SERVING, "m-a") or {}
    containers = serving["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"]
    return next((c["image"] for c in containers if c["name"] == "runtime"), None)


async def test_only_the_configured_namespaces_are_watched(
    cluster: Cluster, start_reconciler: Callable[..., Awaitable[RunningReconciler]]
) -> None:
    cluster.fake.create_namespace("elsewhere")
    reconciler = await start_reconciler(namespaces=("ns",))
    cluster.create_booster(booster("m", backend("a")))
    outside = booster("m", backend("a"))
    outside["metadata"]["namespace"] = "elsewhere"
    cluster.create_booster(outside)
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await quiet(0.3)
    assert cluster.names(MODEL_SERVING, "elsewhere") == []
    assert all(e.namespace == "ns" for e in reconciler.writes())
