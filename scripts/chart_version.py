"""Keep the chart's `version` moving with its content: one recorded digest per chart version.

Helm (and every chart repository and GitOps tool) treats a chart version as immutable: two different charts
published as the same version are a silent surprise for whoever installed the first. So the content of
charts/modelbooster (templates, values, schema, CRDs, dashboard, the child-CRD subchart) is hashed, and
charts/modelbooster.digests records the digest of each chart version. A test fails when the content differs
from the digest recorded for the version in Chart.yaml.

    python scripts/chart_version.py               # check (exit 1 with what to run when stale)
    python scripts/chart_version.py --record      # record the current content as the current version
    python scripts/chart_version.py --bump patch  # next patch version in both Chart.yaml files, then record
    python scripts/chart_version.py --digest DIR  # print the digest of a chart directory (e.g. an old one)

`--record` alone is right while the version in Chart.yaml has not been released (several changes merged into
one release); once a version is published, `--bump` first. The version fields themselves (and the
subchart's version in `dependencies`) are left out of the digest, so bumping does not change it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
CHART = REPO_ROOT / "charts" / "modelbooster"
DIGESTS = REPO_ROOT / "charts" / "modelbooster.digests"
_VERSION_LINE = re.compile(r"^(?P<key>version: *)(?P<value>\S+)[ \t]*$", flags=re.MULTILINE)
_DEPENDENCY_VERSION = re.compile(r"^(?P<key>    version: *)(?P<value>\S+)[ \t]*$", flags=re.MULTILINE)
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


class ChartVersionError(ValueError):
    """The chart or the digest file is not in a form this script understands."""


def _files(chart: Path) -> Iterator[Path]:
    for path in sorted(chart.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path


def _chart_yaml_without_versions(text: str) -> bytes:
    document: dict[str, Any] = yaml.safe_load(text)
    document.pop("version", None)
    for dependency in document.get("dependencies") or []:
        dependency.pop("version", None)
    return json.dumps(document, sort_keys=True).encode()


def digest(chart: Path) -> str:
    """sha256 over every file's path and content, with the chart version fields left out."""
    total = hashlib.sha256()
    for path in _files(chart):
        relative = path.relative_to(chart).as_posix()
        content = path.read_bytes()
        if path.name == "Chart.yaml":
            content = _chart_yaml_without_versions(content.decode("utf-8"))
        total.update(f"{relative}\0{hashlib.sha256(content).hexdigest()}\n".encode())
    return f"sha256:{total.hexdigest()}"


def chart_version(chart: Path) -> str:
    document: dict[str, Any] = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
    return str(document["version"])


def read_digests(path: Path = DIGESTS) -> dict[str, str]:
    """Chart version -> digest, from `<version> <digest>` lines (`#` comments allowed)."""
    recorded: dict[str, str] = {}
    if not path.exists():
        return recorded
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        parts = text.split("#", 1)[0].split()
        if not parts:
            continue
        if len(parts) != 2 or parts[0] in recorded:
            raise ChartVersionError(f"{path.name}:{number}: want one `<version> sha256:<hex>` per version")
        recorded[parts[0]] = parts[1]
    return recorded


def write_digests(recorded: dict[str, str], path: Path = DIGESTS) -> None:
    header = "# chart version -> digest of charts/modelbooster (scripts/chart_version.py); one line per version\n"
    lines = [f"{version} {value}\n" for version, value in sorted(recorded.items(), key=lambda kv: _key(kv[0]))]
    path.write_text(header + "".join(lines), encoding="utf-8")


def _key(version: str) -> tuple[int, ...]:
    match = _SEMVER.match(version)
    return tuple(int(part) for part in match.groups()) if match else (sys.maxsize,)


def problem(chart: Path = CHART, digests: Path = DIGESTS) -> str | None:
    """Why the recorded digests do not cover the chart as it is (None when they do), with what to run."""
    version = chart_version(chart)
    current = digest(chart)
    recorded = read_digests(digests).get(version)
    if recorded == current:
        return None
    run = "python scripts/chart_version.py"
    if recorded is None:
        return f"chart version {version} has no recorded digest: run `{run} --record`"
    return (
        f"charts/modelbooster changed but its version is still {version} (recorded {recorded}, now {current}). "
        f"If {version} is not released yet, run `{run} --record`; otherwise bump it with `{run} --bump patch` "
        "(or minor), which also records the new digest."
    )


def bump(chart: Path, part: str) -> str:
    """Raise the version of the chart, its local subcharts and the dependencies on them; return the new one."""
    old = chart_version(chart)
    match = _SEMVER.match(old)
    if not match:
        raise ChartVersionError(f"chart version {old!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(part_) for part_ in match.groups())
    new = f"{major}.{minor + 1}.0" if part == "minor" else f"{major}.{minor}.{patch + 1}"
    for path in (chart / "Chart.yaml", *sorted((chart / "charts").glob("*/Chart.yaml"))):
        text = path.read_text(encoding="utf-8")
        text = _VERSION_LINE.sub(lambda m: f"{m['key']}{new}", text, count=1)
        if path.parent == chart:
            text = _DEPENDENCY_VERSION.sub(lambda m: f"{m['key']}{new}", text)
        path.write_text(text, encoding="utf-8")
    return new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--record", action="store_true", help="record the digest of the current chart version")
    action.add_argument("--bump", choices=("patch", "minor"), help="bump the chart version, then record")
    action.add_argument("--digest", metavar="CHART_DIR", help="print the digest of a chart directory")
    args = parser.parse_args(argv)
    if args.digest:
        print(digest(Path(args.digest)))
        return 0
    if args.record or args.bump:
        if args.bump:
            print(f"chart version {bump(CHART, args.bump)}")
        recorded = read_digests()
        recorded[chart_version(CHART)] = digest(CHART)
        write_digests(recorded)
        print(f"recorded {chart_version(CHART)} {recorded[chart_version(CHART)]} in {DIGESTS.name}")
        return 0
    reason = problem()
    if reason:
        print(reason, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
