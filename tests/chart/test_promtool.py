"""Without promtool the alert and dashboard checks say so: they fail in CI, and elsewhere skip with a reason
that names what is not checked and how to install promtool."""

from __future__ import annotations

import pytest

from tests.chart import promtool


@pytest.fixture
def no_promtool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(promtool.shutil, "which", lambda _name: None)
    monkeypatch.delenv("CI", raising=False)


@pytest.mark.usefixtures("no_promtool")
def test_missing_promtool_is_a_skip_that_says_what_is_not_checked_and_how_to_install_it() -> None:
    with pytest.raises(pytest.skip.Exception, match=r"NOT checked.*apt-get install prometheus"):
        promtool.promtool()


@pytest.mark.usefixtures("no_promtool")
def test_missing_promtool_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"CI must run these checks"):
        promtool.promtool()
