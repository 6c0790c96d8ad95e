"""docs/inferno.md says plainly what acts on desiredAlloc, and its offline check runs as written."""

from __future__ import annotations

import re
from pathlib import Path

from modelbooster.cli import main

REPO_ROOT = Path(__file__).resolve().parents[3]
DOC = (REPO_ROOT / "docs" / "inferno.md").read_text(encoding="utf-8")


def test_the_doc_says_what_acts_on_desired_alloc() -> None:
    match = re.search(r"\*\*What acts on `desiredAlloc`\.\*\* ([^\n]+)", DOC)
    assert match
    assert match.group(1).startswith("Nothing, by itself.")


def test_the_offline_check_the_doc_gives_passes_on_the_examples() -> None:
    [command] = re.findall(r"`modelbooster validate -f (examples/inferno/)`", DOC)
    assert main(["validate", "-f", str(REPO_ROOT / command)]) == 0
