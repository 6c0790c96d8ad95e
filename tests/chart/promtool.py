"""Run Prometheus' promtool on rule files: `check rules` parses and lints every expression, `test rules` runs
alert unit tests.

promtool is not a Python package: Debian's `prometheus` package ships it, and .ci/run installs it. In CI
(`CI` set) a missing promtool FAILS the tests that need it, so alert rules never go unchecked there. On a
developer's machine they are skipped instead, so that the README's test command passes on a fresh machine,
but never silently: the reason, which names what is not checked and how to install promtool, is printed in
pytest's summary (`-ra` is in the project's pytest options).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

INSTALL: Final = "apt-get install prometheus (Debian/Ubuntu; it ships promtool)"
# promtool answers in well under a second; the bound only keeps a wedged binary from hanging the suite.
TIMEOUT_SECONDS: Final = 60


def promtool() -> str:
    """The promtool executable; without it, fail in CI and skip elsewhere, both saying how to get it."""
    found = shutil.which("promtool")
    if found is not None:
        return found
    missing = (
        f"promtool is not installed, so the alert rules and dashboard queries are NOT checked; install it ({INSTALL})"
    )
    if os.environ.get("CI"):
        pytest.fail(f"{missing}. CI must run these checks.", pytrace=False)
    pytest.skip(missing)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`promtool ARGS` in `cwd`; its output is in the result, for the assertion message."""
    return subprocess.run(
        [promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
    )
