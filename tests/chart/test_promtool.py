"""Without promtool the alert and dashboard checks say so loudly: they fail with the install command, and
skip only when a developer opts out outside CI."""

from __future__ import annotations

import pytest

from tests.chart import promtool


@pytest.fixture
def no_promtool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(promtool.shutil, "which", lambda _name: None)
    monkeypatch.delenv(promtool.OPT_OUT, raising=False)
    monkeypatch.delenv("CI", raising=False)


@pytest.mark.usefixtures("no_promtool")
def test_missing_promtool_fails_with_how_to_install_it() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"promtool is not installed.*apt-get install prometheus"):
        promtool.promtool()


@pytest.mark.usefixtures("no_promtool")
def test_the_opt_out_skips_with_a_reason_that_says_what_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(promtool.OPT_OUT, "1")
    with pytest.raises(pytest.skip.Exception, match="NOT checked"):
        promtool.promtool()


@pytest.mark.usefixtures("no_promtool")
def test_ci_ignores_the_opt_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(promtool.OPT_OUT, "1")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="not honoured in CI"):
        promtool.promtool()
