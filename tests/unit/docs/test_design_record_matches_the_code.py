"""Statements of the docs that the code decides: the release checklist names every Chart.yaml the version test
reads, and docs/design/api.md §3 quotes the CEL rules the CRD really carries (transition rules that spare a
carried-over field)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shared.crds import crds

REPO_ROOT = Path(__file__).resolve().parents[3]
CHART = REPO_ROOT / "charts" / "modelbooster"


def _section(document: str, number: int) -> str:
    match = re.search(rf"^## §{number} .*?(?=^## §|\Z)", document, flags=re.MULTILINE | re.DOTALL)
    assert match, f"no section §{number}"
    return match.group(0)


def _rules(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield from node.get("x-kubernetes-validations", ())
        for value in node.values():
            yield from _rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from _rules(value)


def test_the_release_checklist_names_every_chart_whose_app_version_moves() -> None:
    checklist = (REPO_ROOT / "docs" / "release.md").read_text(encoding="utf-8")
    version_step = checklist.split("1. **Version.**", 1)[1].split("2. **", 1)[0]
    charts = [CHART / "Chart.yaml", *sorted((CHART / "charts").glob("*/Chart.yaml"))]
    assert len(charts) >= 3  # the chart, child-crds and inferno-crds
    named = " ".join(version_step.split())
    for chart in charts:
        assert f"`{chart.relative_to(REPO_ROOT)}`" in named, chart


def test_api_section_3_quotes_the_transition_rules_the_crd_carries() -> None:
    section = _section((REPO_ROOT / "docs" / "design" / "api.md").read_text(encoding="utf-8"), 3)
    (booster,) = [d for d in crds() if d["spec"]["names"]["kind"] == "ModelBooster"]
    rules = {rule["rule"]: rule for rule in _rules(booster["spec"]["versions"][0]["schema"]["openAPIV3Schema"])}
    quoted = [text for text in re.findall(r"`([^`]*has\([^`]*)`", section)]
    assert quoted, "api.md §3 quotes no CEL rule"
    for text in quoted:
        assert text in rules, f"api.md §3 quotes {text!r}, which is no rule of the CRD"
        assert rules[text].get("optionalOldSelf") is True, text
    assert "optionalOldSelf: true" in section
