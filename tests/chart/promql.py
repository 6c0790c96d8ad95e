"""The PromQL of the dashboard and the alerts, read with a real parser (promql-parser): which metrics and
labels a query uses, checked against the metric tables of docs/chart.md (the tables tests/chart/test_metrics.py
and tests/e2e hold equal to what the processes export)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import promql_parser as promql

from tests.chart.render import REPO_ROOT
from tests.e2e.documented import section, table_rows

DOC: Final = REPO_ROOT / "docs" / "chart.md"
METRIC_TABLES: Final = ("Webhook metrics", "Reconciler metrics", "Engine metrics Inferno reads")
# Labels a Prometheus scrape through the chart's ServiceMonitors adds to every series.
TARGET_LABELS: Final = frozenset({"namespace", "job", "instance", "pod", "service", "container", "endpoint"})
HISTOGRAM_SERIES: Final = ("_bucket", "_count", "_sum")
_BACKTICKED: Final = re.compile(r"`([a-zA-Z_:][a-zA-Z0-9_:]*)`")  # recording-rule style names (vllm:...) too


@dataclass(frozen=True)
class DocumentedMetric:
    type: str
    labels: frozenset[str]


# Series Prometheus itself records for every scrape target (not exported by the processes).
SCRAPE_SERIES: Final = {"up": DocumentedMetric("gauge", frozenset())}


def documented_metrics() -> dict[str, DocumentedMetric]:
    """Every metric of the docs' tables with its type and the labels its `Labels` cell names."""
    found: dict[str, DocumentedMetric] = {}
    text = DOC.read_text()
    for heading in METRIC_TABLES:
        for row in table_rows(section(text, heading)):
            name = _BACKTICKED.fullmatch(row["metric"])
            assert name, f"docs/chart.md, {heading}: {row['metric']!r} is not one backticked metric name"
            labels = frozenset(_BACKTICKED.findall(row["labels"]))
            found[name.group(1)] = DocumentedMetric(type=row["type"], labels=labels)
    assert found, "docs/chart.md has no metric tables"
    return found


@dataclass
class Uses:
    """What one expression reads: series selectors (metric name -> label names matched) and the label names
    of its `by`, `without`, `on`, `ignoring` and `group_left/right` clauses."""

    selectors: list[tuple[str | None, set[str]]] = field(default_factory=list)
    grouping: set[str] = field(default_factory=set)


def parse(expr: str) -> Any:
    """The syntax tree; ValueError with the parser's reason when `expr` is not PromQL."""
    return promql.parse(expr)


def uses(expr: str) -> Uses:
    found = Uses()

    def visit(node: Any) -> None:
        if isinstance(node, promql.VectorSelector):
            found.selectors.append((node.name, {matcher.name for matcher in node.matchers.matchers}))
        elif isinstance(node, promql.AggregateExpr) and node.modifier is not None:
            found.grouping.update(node.modifier.labels or ())
        elif isinstance(node, promql.BinaryExpr) and node.modifier is not None:
            if node.modifier.matching is not None:
                found.grouping.update(node.modifier.matching.labels)
            found.grouping.update(node.modifier.group_labels or ())

    promql.walk(parse(expr), pre_visit=visit)
    return found


def family(name: str, documented: dict[str, DocumentedMetric]) -> str | None:
    """The documented metric a series name belongs to (`x_bucket` of histogram `x` is `x`), or None."""
    if name in documented:
        return name
    for suffix in HISTOGRAM_SERIES:
        base = name.removesuffix(suffix)
        if base != name and documented.get(base, DocumentedMetric("", frozenset())).type == "histogram":
            return base
    return None


def problems(expr: str, documented: dict[str, DocumentedMetric]) -> list[str]:
    """Why `expr` reads something the processes do not export (empty when it reads only documented series)."""
    found = uses(expr)
    documented = {**SCRAPE_SERIES, **documented}
    errors = []
    allowed_grouping = set(TARGET_LABELS)
    for name, matched in found.selectors:
        if name is None:
            errors.append("a selector without a metric name")
            continue
        metric = family(name, documented)
        if metric is None:
            errors.append(f"{name} is not in the metric tables of docs/chart.md")
            continue
        labels = documented[metric].labels | TARGET_LABELS | ({"le"} if name.endswith("_bucket") else set())
        allowed_grouping |= labels
        if unknown := matched - labels:
            errors.append(f"{name} has no label {', '.join(sorted(unknown))}")
    if unknown := found.grouping - allowed_grouping:
        errors.append(f"groups by labels no metric of the query has: {', '.join(sorted(unknown))}")
    return errors
