"""One version from one source: the package version (pyproject.toml) is the chart's appVersion, hence the
default image tag, and what `modelbooster --version` and `modelbooster_build_info` report; the chart's own
version moves with every change of the chart (scripts/chart_version.py records a digest per version)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from modelbooster.cli import main as modelbooster_main
from process.build import register_build_info, version
from tests.chart.render import CHART_DIR, REPO_ROOT, TEST_REPOSITORY, Rendered
from tests.chart.scripts import load_script
from webhook.metrics import WebhookMetrics


@pytest.fixture(scope="module")
def chart_version() -> ModuleType:
    return load_script("chart_version")


def _yaml(path: Path) -> dict[str, object]:
    document: dict[str, object] = yaml.safe_load(path.read_text())
    return document


def package_version() -> str:
    return str(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"])


SUBCHARTS = sorted(path.parent for path in (CHART_DIR / "charts").glob("*/Chart.yaml"))


def test_the_package_version_is_the_charts_app_version() -> None:
    assert _yaml(CHART_DIR / "Chart.yaml")["appVersion"] == package_version()
    for subchart in SUBCHARTS:
        assert _yaml(subchart / "Chart.yaml")["appVersion"] == package_version(), subchart.name


def test_the_subcharts_move_with_the_chart() -> None:
    chart = _yaml(CHART_DIR / "Chart.yaml")
    dependencies = {dependency["name"]: dependency["version"] for dependency in chart["dependencies"]}  # type: ignore[union-attr]
    assert set(dependencies) == {subchart.name for subchart in SUBCHARTS}
    for subchart in SUBCHARTS:
        assert _yaml(subchart / "Chart.yaml")["version"] == chart["version"] == dependencies[subchart.name]


def test_the_default_image_tag_is_the_package_version(defaults: Rendered) -> None:
    for component in ("webhook", "reconciler"):
        (container,) = defaults.deployment(component)["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"{TEST_REPOSITORY}:{package_version()}"


def test_version_flag_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        modelbooster_main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"modelbooster {package_version()}"
    assert version() == package_version()


def test_build_info_reports_the_version() -> None:
    registry = CollectorRegistry()
    register_build_info(registry, component="reconciler")
    text = generate_latest(registry).decode()
    assert 'modelbooster_build_info{component="reconciler",python_version=' in text
    assert f'version="{package_version()}"}} 1.0' in text
    webhook = generate_latest(WebhookMetrics().registry).decode()
    assert 'component="webhook"' in webhook
    assert f'version="{package_version()}"}} 1.0' in webhook


def test_the_recorded_digest_covers_the_chart(chart_version: ModuleType) -> None:
    reason = chart_version.problem()
    assert reason is None, reason


def test_a_template_change_without_a_new_version_is_caught(chart_version: ModuleType, tmp_path: Path) -> None:
    chart = tmp_path / "modelbooster"
    shutil.copytree(CHART_DIR, chart)
    digests = tmp_path / "digests"
    shutil.copy(chart_version.DIGESTS, digests)
    assert chart_version.problem(chart, digests) is None
    notes = chart / "templates" / "NOTES.txt"
    notes.write_text(notes.read_text() + "\none more line\n")
    reason = chart_version.problem(chart, digests)
    assert reason is not None
    assert "python scripts/chart_version.py --record" in reason
    assert "--bump patch" in reason


def test_bumping_changes_the_version_fields_only(chart_version: ModuleType, tmp_path: Path) -> None:
    chart = tmp_path / "modelbooster"
    shutil.copytree(CHART_DIR, chart)
    before = chart_version.digest(chart)
    old = chart_version.chart_version(chart)
    new = chart_version.bump(chart, "patch")
    major, minor, patch = (int(part) for part in old.split("."))
    assert new == f"{major}.{minor}.{patch + 1}"
    for subchart in sorted((chart / "charts").glob("*/Chart.yaml")):
        assert _yaml(subchart)["version"] == new, subchart
    dependencies: list[dict[str, object]] = _yaml(chart / "Chart.yaml")["dependencies"]  # type: ignore[assignment]
    assert {dependency["version"] for dependency in dependencies} == {new}
    assert chart_version.digest(chart) == before
