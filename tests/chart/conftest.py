"""Fixtures of the chart tests: one render per scenario, shared by the tests of a module."""

from __future__ import annotations

import pytest

from tests.chart.render import Rendered, render
from tests.chart.scenarios import SCENARIOS


@pytest.fixture(scope="module")
def rendered_scenarios() -> dict[str, Rendered]:
    return {name: render(values) for name, values in SCENARIOS.items()}


@pytest.fixture(scope="module")
def defaults() -> Rendered:
    return render()
