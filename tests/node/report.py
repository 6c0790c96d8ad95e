"""The lifecycle table: one row per scenario, as the issue that asked for it lays it out, plus JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.node.scenarios import Result


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def table(results: Sequence[Result]) -> str:
    lines = [
        "| scenario | failed admissions | unchecked | longest create → Initialized: admitted creates (all; p50) "
        "| writes |",
        "|---|---|---|---|---|",
    ]
    for result in results:
        report = result.report
        failed = str(result.failed)
        if result.failed > 1:
            failed += f" in {report.window('failed'):.1f} s"
        unchecked = str(result.unchecked)
        if result.unchecked > 1:
            unchecked += f" in {report.window('unchecked'):.1f} s"
        initialized = (
            f"{_seconds(report.longest_initialized(checked_only=True))} "
            f"({_seconds(report.longest_initialized())}; {_seconds(report.percentile_initialized(0.5))})"
        )
        if report.not_initialized:
            initialized += f", {len(report.not_initialized)} never"
        lines.append(f"| {result.title} | {failed} | {unchecked} | {initialized} | {report.admissions()} |")
    return "\n".join(lines)


def details(results: Sequence[Result]) -> str:
    lines = []
    for result in results:
        extra = [*result.notes, *(f"failed: {m}" for m in result.report.messages("failed", limit=3))]
        slowest = ", ".join(f"{w.kind} {w.seconds:.2f} s at {w.at:.1f} s" for w in result.report.slowest())
        extra.append(f"slowest answers: {slowest}")
        if result.balance:
            extra.append("admissions per webhook pod: " + ", ".join(f"{k}={v}" for k, v in result.balance.items()))
        if extra:
            lines.append(f"{result.key}: " + "; ".join(extra))
    return "\n".join(lines)


def write_json(results: Sequence[Result], path: Path, **meta: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**meta, "scenarios": [result.row() for result in results]}, indent=2) + "\n")
