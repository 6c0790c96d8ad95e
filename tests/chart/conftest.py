"""Fixtures of the chart tests: one render per scenario, shared by every chart test (read them, never modify them)."""

from __future__ import annotations

import pytest

from tests.chart.render import Rendered, render
from tests.chart.scenarios import SCENARIOS


@pytest.fixture(scope="session")
def rendered_scenarios() -> dict[str, Rendered]:
    return {name: render(values) for name, values in SCENARIOS.items()}


@pytest.fixture(scope="session")
def defaults() -> Rendered:
    return render()
