"""The user docs (README, docs/ outside the design record, the chart's description) speak of the product: what it
does, how to run it, its figures and limits; never of how it was built (issue numbers, rounds of work, "the
reference" as a name for Kthena, the design record's quirk numbers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
USER_DOCS = sorted(
    [
        REPO_ROOT / "README.md",
        REPO_ROOT / "charts" / "modelbooster" / "Chart.yaml",
        *(path for path in (REPO_ROOT / "docs").glob("*.md")),
    ]
)
# Our own history, as it crept into the docs; each with why a reader cannot use it.
HISTORY = {
    r"\bissues? #?\d+\b": "an issue number (the reader has no tracker)",
    r"\b(?:this|the|that|previous|last|next|each|a) round\b": "a round of work",
    r"\bround before\b": "a round of work",
    r"\bbefore issue\b": "an issue number",
    r"\bthe reference(?:'s)?\b": "jargon: say Kthena (and its version)",
    r"\bQ\d{1,2}\b": "a quirk number of the design record",
}


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_no_history_in_user_docs(path: Path) -> None:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for pattern, why in HISTORY.items():
            for match in re.finditer(pattern, line, flags=re.IGNORECASE):
                found.append(f"{path.name}:{number}: {match.group(0)!r}: {why}")
    assert found == []


def test_the_design_record_is_not_checked() -> None:
    # docs/design/ is the project's own record: quirk numbers and history belong there.
    assert all("design" not in path.parts for path in USER_DOCS)
