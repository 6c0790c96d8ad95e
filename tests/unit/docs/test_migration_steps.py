"""docs/migrating-from-kthena.md gives the steps a migration needs: Kthena's ModelBooster controller and webhooks
turned off by their real names, and the image built and pushed (none is published)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
GUIDE = (REPO_ROOT / "docs" / "migrating-from-kthena.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", GUIDE, flags=re.MULTILINE | re.DOTALL)
    assert match, f"no section {title!r}"
    return match.group(1)


def test_kthenas_modelbooster_controller_is_turned_off_with_its_controller_list() -> None:
    # Kthena's kthena-controller-manager: `--controllers` (pflag string slice), names modelserving, modelbooster,
    # autoscaler; `-name` disables one, `*` enables all (a list without `*` enables only what it names).
    section = _section("Turning off Kthena's own ModelBooster controller and webhooks")
    assert "--controllers=*,-modelbooster" in section
    assert "workload.controllerManager.controllers={*,-modelbooster}" in section
    assert "Controller <modelbooster> is disabled" in section  # the line Kthena logs for a disabled controller


def test_kthenas_modelbooster_webhooks_are_named_as_kthena_registers_them() -> None:
    section = _section("Turning off Kthena's own ModelBooster controller and webhooks")
    for name in (
        "mutate-modelbooster.volcano.sh",
        "validate-modelbooster.volcano.sh",
        "kthena-controller-manager-mutating-webhook",
        "kthena-controller-manager-validating-webhook",
    ):
        assert name in section
    assert "failurePolicy: Fail" in section


def test_the_guide_says_no_image_is_published_and_how_to_build_and_push_one() -> None:
    section = _section("The image")
    values = yaml.safe_load((REPO_ROOT / "charts" / "modelbooster" / "values.yaml").read_text())
    assert f"`{values['image']['repository']}`" in section
    assert "No image is published" in section
    assert re.search(r"^docker build -t (\S+) \.$", section, flags=re.MULTILINE)
    assert re.search(r"^docker push \S+$", section, flags=re.MULTILINE)
    assert "--set image.repository=" in section
