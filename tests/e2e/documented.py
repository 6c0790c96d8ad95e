"""The metric names our documentation promises, read from the docs' tables, and a Prometheus text parser.

A metric table is a Markdown table under a heading; the metric names are the backticked names in the first
cell of each row (`a`, `b` lists two). Which table belongs to which process is fixed here, per document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

DOCS: Final = Path(__file__).resolve().parents[2] / "docs"
_NAME: Final = re.compile(r"`([a-z_:][a-z0-9_:]*)`")
_HEADING: Final = re.compile(r"^(#+)\s+(.*?)\s*$")

# process -> (document, heading of its metric table). A document that does not exist yet is skipped.
SOURCES: Final = {
    "webhook": (("chart.md", "Webhook metrics"), ("webhook.md", "Metrics")),
    "reconciler": (("chart.md", "Reconciler metrics"), ("reconciler.md", "Metrics")),
}


def section(text: str, heading: str) -> str:
    """The lines under `heading` up to the next heading of the same or a higher level ("" if absent)."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        found = _HEADING.match(line)
        if found and found.group(2) == heading:
            level = len(found.group(1))
            body = []
            for rest in lines[start + 1 :]:
                other = _HEADING.match(rest)
                if other and len(other.group(1)) <= level:
                    break
                body.append(rest)
            return "\n".join(body)
    return ""


def table_rows(text: str) -> list[dict[str, str]]:
    """The rows of the Markdown table in `text`, each as {lower-case column header: cell}, in column order."""
    rows: list[dict[str, str]] = []
    header: list[str] = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= {"-", ":"}:
            continue
        if not header:
            header = [cell.lower() for cell in cells]
            continue
        rows.append(dict(zip(header, cells, strict=False)))
    return rows


def table_metric_names(text: str) -> dict[str, str | None]:
    """Metric name -> its documented type (the `Type` column, or "(histogram)" after the name), None if
    the table does not say."""
    names: dict[str, str | None] = {}
    for row in table_rows(text):
        first = next(iter(row.values()))
        declared = row.get("type")
        for name in _NAME.findall(first):
            inline = re.search(rf"`{name}`[^`]*?\((counter|gauge|histogram)", first)
            names[name] = declared or (inline.group(1) if inline else None)
    return names


def documented_metrics(process: str) -> dict[str, dict[str, str | None]]:
    """document -> {metric name: documented type} for `process` (only documents that exist)."""
    found: dict[str, dict[str, str | None]] = {}
    for document, heading in SOURCES[process]:
        path = DOCS / document
        if path.exists():
            found[document] = table_metric_names(section(path.read_text(), heading))
    return found


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


_SAMPLE: Final = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL: Final = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> tuple[dict[str, str], list[Sample]]:
    """(metric family -> type, samples) of the Prometheus text format."""
    types: dict[str, str] = {}
    samples: list[Sample] = []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ", 3)
            types[family] = kind
        elif line and not line.startswith("#"):
            match = _SAMPLE.match(line)
            if match is None:
                raise ValueError(f"not a Prometheus sample line: {line!r}")
            labels = dict(_LABEL.findall(match.group(2) or ""))
            samples.append(Sample(match.group(1), labels, float(match.group(3))))
    return types, samples


def family_of(documented: str, types: dict[str, str]) -> str | None:
    """The exposed family a documented name belongs to (counters are documented with their `_total`)."""
    if documented in types:
        return documented
    if documented.endswith("_total") and types.get(documented.removesuffix("_total")) == "counter":
        return documented.removesuffix("_total")
    return None


def samples_of(family: str, kind: str, samples: Iterable[Sample]) -> list[Sample]:
    suffixes = {"counter": ("", "_total"), "histogram": ("_bucket", "_count", "_sum")}.get(kind, ("",))
    wanted = (
        {family.removesuffix("_total") + suffix for suffix in suffixes}
        if kind == "counter"
        else {family + suffix for suffix in suffixes}
    )
    return [sample for sample in samples if sample.name in wanted]
