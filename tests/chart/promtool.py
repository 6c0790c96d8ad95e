"""Run Prometheus' promtool on rule files: `check rules` parses and lints every expression, `test rules` runs
alert unit tests.

promtool is not a Python package: Debian's `prometheus` package ships it, and .ci/run installs it. When it is
missing the tests that need it FAIL with the command that installs it, because a silent skip would let alert
rules go untested. A developer who cannot install it may opt out knowingly with MODELBOOSTER_SKIP_PROMTOOL=1,
which turns the failure into a skip whose reason pytest prints in its summary (`-ra`). CI ignores the opt-out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

OPT_OUT: Final = "MODELBOOSTER_SKIP_PROMTOOL"
INSTALL: Final = "apt-get install prometheus (Debian/Ubuntu; it ships promtool)"
# promtool answers in well under a second; the bound only keeps a wedged binary from hanging the suite.
TIMEOUT_SECONDS: Final = 60


def promtool() -> str:
    """The promtool executable, or fail (skip only on an explicit opt-out outside CI) saying how to get it."""
    found = shutil.which("promtool")
    if found is not None:
        return found
    if os.environ.get(OPT_OUT) == "1" and not os.environ.get("CI"):
        pytest.skip(f"promtool is not installed and {OPT_OUT}=1: the alert rules and dashboard queries are NOT checked")
    pytest.fail(
        f"promtool is not installed, so the alert rules and dashboard queries cannot be checked. Install it "
        f"({INSTALL}), or set {OPT_OUT}=1 to skip these tests knowingly (not honoured in CI).",
        pytrace=False,
    )


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`promtool ARGS` in `cwd`; its output is in the result, for the assertion message."""
    return subprocess.run(
        [promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
    )
