"""Write the generated CRDs into the chart, split the way Helm needs for `crds.installChildCRDs`.

Helm installs every file in a chart's crds/ directory unconditionally, but a subchart's only when its
condition holds. So the CRDs that are always ours (ModelBooster and the Inferno kinds) go to
charts/modelbooster/crds/, and the five child kinds, which Kthena may already provide, go to the
`child-crds` subchart (charts/modelbooster/charts/child-crds/crds/), enabled by `crds.installChildCRDs`.

    python scripts/sync_chart_crds.py           # write; print the files written
    python scripts/sync_chart_crds.py --check   # exit 1 and name the stale files instead of writing
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shared.constants import (
    KIND_AUTOSCALING_POLICY,
    KIND_AUTOSCALING_POLICY_BINDING,
    KIND_MODEL_ROUTE,
    KIND_MODEL_SERVER,
    KIND_MODEL_SERVING,
)
from shared.crds import crds, file_name, to_yaml

CHART_DIR = Path(__file__).resolve().parents[1] / "charts" / "modelbooster"
MAIN_CRDS_DIR = CHART_DIR / "crds"
CHILD_CRDS_DIR = CHART_DIR / "charts" / "child-crds" / "crds"
CHILD_KINDS = frozenset(
    {
        KIND_MODEL_SERVING,
        KIND_MODEL_SERVER,
        KIND_MODEL_ROUTE,
        KIND_AUTOSCALING_POLICY,
        KIND_AUTOSCALING_POLICY_BINDING,
    }
)


def directory_for(definition: Mapping[str, Any]) -> Path:
    return CHILD_CRDS_DIR if definition["spec"]["names"]["kind"] in CHILD_KINDS else MAIN_CRDS_DIR


def desired_files() -> dict[Path, str]:
    """Every CRD file the chart must hold, with its exact text."""
    return {directory_for(d) / file_name(d): to_yaml(d) for d in crds()}


def differences(desired: Mapping[Path, str]) -> list[str]:
    """What is missing, stale or extra in the chart's two CRD directories (empty when in sync)."""
    problems = []
    for path, text in desired.items():
        if not path.exists():
            problems.append(f"missing: {path.relative_to(CHART_DIR)}")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"stale: {path.relative_to(CHART_DIR)}")
    homes = {path.name: path for path in desired}
    for directory in (MAIN_CRDS_DIR, CHILD_CRDS_DIR):
        for path in sorted(directory.glob("*.yaml")):
            if path in desired:
                continue
            if path.name in homes:
                problems.append(
                    f"misplaced: {path.relative_to(CHART_DIR)} belongs in {homes[path.name].relative_to(CHART_DIR)}"
                )
            else:
                problems.append(f"not generated (remove it): {path.relative_to(CHART_DIR)}")
    return problems


def write(desired: Mapping[Path, str]) -> list[Path]:
    for directory in (MAIN_CRDS_DIR, CHILD_CRDS_DIR):
        directory.mkdir(parents=True, exist_ok=True)
        for path in directory.glob("*.yaml"):
            if path not in desired:
                path.unlink()
    written = []
    for path, text in desired.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only report differences; exit 1 when there are any")
    args = parser.parse_args(argv)
    desired = desired_files()
    if args.check:
        problems = differences(desired)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    for path in write(desired):
        print(path.relative_to(CHART_DIR.parents[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
