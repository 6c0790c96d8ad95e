"""Every relative link of README.md and docs/ leads somewhere: the file exists, and an `#anchor` names a heading
of it as GitHub renders headings into anchors (lower case, punctuation dropped, spaces as `-`, repeats numbered)."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
# [text](target) and [text](target "title"); images too. The text may hold one level of brackets.
_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def _prose(text: str) -> str:
    """The text without code blocks and code spans, where `[x](y)` is not a link."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without markup, lower case, without punctuation except `-` and `_`,
    spaces as `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"[`*]|<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: Counter[str] = Counter()
    found = set(_HTML_ANCHOR.findall(text))
    for heading in _HEADING.findall(text):
        base = slug(heading)
        found.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return frozenset(found)


def links(page: Path) -> list[str]:
    return [target for target in _LINK.findall(_prose(page.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]  # fmt: skip


def test_the_slug_is_githubs() -> None:
    assert slug("§4 Ownership and adoption") == "4-ownership-and-adoption"
    assert slug("3. Install ours") == "3-install-ours"
    assert slug("Coming from Kthena v0.2 to v0.4: one backend with a replica range") == (
        "coming-from-kthena-v02-to-v04-one-backend-with-a-replica-range"
    )
    assert slug("`modelbooster render` and [the runbook](x.md)") == "modelbooster-render-and-the-runbook"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading with that anchor in {destination.relative_to(ROOT)}")
    assert broken == []
