"""Whether the cluster serves the CRDs this version of modelbooster generates: digests and the verdict
(docs/design/upgrades.md §4).

Every CRD we generate carries `ANNOTATION_CRD_DIGEST`, the sha256 of its `spec` as generated. The API server
adds defaults to a stored spec (`conversion`, ...), so a served CRD is judged by the annotation it carries,
not by hashing what the server returns: equal digests mean the CRD was applied from this version's files.
A CRD applied by hand-edited files keeping the old annotation would pass; that is a choice of its author.

Helm creates a chart's CRDs on the first install and never upgrades them (docs/chart.md, "Upgrades"), so
after `helm upgrade` the served CRDs are those of the first install until someone applies the new ones. The
reconciler judges every CRD at start and on every change and reports the outdated ones (a Warning log and
Event, `modelbooster_crd_outdated`, an alert); it keeps running, since most of an older schema still works.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from shared.constants import ANNOTATION_CRD_DIGEST

DIGEST_ANNOTATION: Final = ANNOTATION_CRD_DIGEST
# Where an operator reads how to apply the CRDs of a release (and why Helm does not).
UPGRADE_DOCS: Final = "docs/chart.md#upgrades-crds-and-uninstalling"


def apply_command(chart_directory: str = "crds") -> str:
    """The documented command that applies the CRDs in one directory of the chart (docs/chart.md)."""
    return f"kubectl apply --server-side --force-conflicts -f charts/modelbooster/{chart_directory}/"


APPLY_COMMAND: Final = apply_command()

Verdict = Literal["current", "outdated", "absent"]


def spec_digest(spec: Mapping[str, Any]) -> str:
    """sha256 of the spec's canonical JSON (sorted keys, no spaces), as `sha256:<hex>`."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()}"


@dataclass(frozen=True)
class CrdJudgement:
    name: str
    verdict: Verdict
    # Why it is outdated, in words for a log line and an Event ("" when current or absent).
    reason: str = ""

    @property
    def outdated(self) -> bool:
        return self.verdict == "outdated"


def judge(name: str, *, expected: str, served_annotations: Mapping[str, str] | None) -> CrdJudgement:
    """The verdict on one CRD: `served_annotations` are the served CRD's annotations, None when not served."""
    if served_annotations is None:
        return CrdJudgement(name, "absent")
    served = served_annotations.get(DIGEST_ANNOTATION)
    if served == expected:
        return CrdJudgement(name, "current")
    if served is None:
        why = "it carries no digest annotation: it was applied from an earlier modelbooster or by another project"
    else:
        why = f"its digest {_short(served)} differs from this version's {_short(expected)}"
    return CrdJudgement(name, "outdated", why)


def outdated_message(judgement: CrdJudgement, *, version: str, chart_directory: str = "crds") -> str:
    """What the Warning says: which CRD, why, and what to run (`chart_directory`: where the chart keeps it)."""
    return (
        f"CustomResourceDefinition {judgement.name} is not the one modelbooster {version} generates "
        f"({judgement.reason}); objects this version writes may be pruned or refused by it. Apply this "
        f"release's CRDs: {apply_command(chart_directory)} (see {UPGRADE_DOCS})"
    )


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


# CRD name -> {"digest", "chartDirectory", "child", "inferno"}, as `modelbooster crds --chart` records it beside this
# module (tests/unit/test_crd_digest.py keeps it equal to what shared/crds.py generates). A process that only
# compares digests reads this table: building the CRDs from the models would cost the reconciler ~10 MB that stay.
DIGEST_TABLE_FILE: Final = Path(__file__).with_name("crd_digests.json")


@functools.cache
def _recorded() -> Mapping[str, Mapping[str, Any]]:
    table: dict[str, Mapping[str, Any]] = json.loads(DIGEST_TABLE_FILE.read_text(encoding="utf-8"))
    return table


def recorded_digests(*, include_children: bool = True, include_inferno: bool = True) -> dict[str, str]:
    """CRD name -> the digest this version generates, from the recorded table; without the child kinds when
    Kthena provides them, without Inferno's when its controller does not run."""
    return {
        name: str(entry["digest"])
        for name, entry in _recorded().items()
        if (include_children or not entry["child"]) and (include_inferno or not entry["inferno"])
    }


def recorded_chart_directories() -> dict[str, str]:
    """CRD name -> the directory of the chart that holds its file (what to apply it from)."""
    return {name: str(entry["chartDirectory"]) for name, entry in _recorded().items()}
