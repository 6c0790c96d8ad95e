"""Zero failed admissions through the chart's whole life, on a real node (docs/design/webhook.md §7-§10).

One test per scenario of tests/node/scenarios.py, in order, on one installed release. Each asserts what the
design promises, never a timing (the times are reported in the terminal summary and in JSON):
- no valid write refused, except, with a frozen webhook process, calls that timed out at it, and, with the
  only node NotReady, new connections that found no webhook endpoint (§10: a single node's limit);
- no write admitted without the webhooks, except in the uninstall window of a reinstall, and there never
  again once a write has been checked after the reinstall (§7);
- every created ModelBooster becomes Initialized.
"""

from __future__ import annotations

import pytest

from tests.node.load import LoadReport
from tests.node.scenarios import SCENARIOS, Result, Scenario, Stage, run

TIMED_OUT = "context deadline exceeded"
# What a call through the Service says when no endpoint is there (kube-proxy rejects, or nothing routes).
NO_ENDPOINT = ("connect: connection refused", "connect: no route to host")


def _failures(report: LoadReport) -> str:
    return "; ".join(report.messages("failed")) or "none"


def _unchecked_after_rearming(report: LoadReport) -> list[float]:
    """Times of writes admitted unchecked after a checked one that followed the first unchecked one."""
    seen_unchecked = rearmed = False
    late = []
    for write in report.writes:
        if write.outcome == "unchecked":
            if rearmed:
                late.append(write.at)
            seen_unchecked = True
        elif write.outcome in ("admitted", "refused") and seen_unchecked:
            rearmed = True
    return late


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.key for scenario in SCENARIOS])
def test_lifecycle(scenario: Scenario, node_stage: Stage, lifecycle_results: list[Result]) -> None:
    result = run(scenario, node_stage)
    lifecycle_results.append(result)
    report = result.report
    assert report.count("skipped") == 0, "the load generator could not keep its rate"
    if scenario.freezes_a_webhook:
        assert all(TIMED_OUT in write.message for write in report.failed()), _failures(report)
    elif scenario.node_not_ready:
        assert all(any(mark in write.message for mark in NO_ENDPOINT) for write in report.failed()), _failures(report)
    else:
        assert report.failed() == [], f"{len(report.failed())} failed admissions: {_failures(report)}"
    if scenario.uninstalls:
        assert _unchecked_after_rearming(report) == [], "admission lapsed again after the reinstall was armed"
    else:
        assert report.count("unchecked") == 0, "writes were admitted without the webhooks"
    assert report.not_initialized == [], f"never Initialized: {report.not_initialized[:10]}"
