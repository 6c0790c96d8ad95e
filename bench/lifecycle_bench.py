"""The chart's whole life on the real single node (../shared/node), under a steady ModelBooster write load:
failed admissions, unchecked admissions and create -> Initialized per lifecycle scenario (tests/node/scenarios.py).

Starts the rig clean (it must not be running), builds the image of `--checkout` into it, installs that
checkout's chart, runs the scenarios in order, prints the table and writes JSON; the rig is stopped at the end.
Needs root. `--checkout` measures another tree with this tree's scenarios (e.g. an export of main: the "before"
of a change).

    python bench/lifecycle_bench.py [--checkout DIR] [--only steady,frozen] [--output bench/results/lifecycle.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.node.report import details, table, write_json  # noqa: E402
from tests.node.rig import RIG_VARIABLE, Rig, usable  # noqa: E402
from tests.node.scenarios import SCENARIOS, run  # noqa: E402
from tests.node.session import Timings, node_session  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kit", type=Path, default=Path(os.environ.get(RIG_VARIABLE, ROOT.parent / "shared" / "node")))
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--only", default="", help="comma-separated scenario keys (default: all, in order)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "lifecycle.json")
    args = parser.parse_args()
    problem = usable(args.kit)
    if problem:
        print(f"lifecycle_bench: {problem}", file=sys.stderr)
        return 2
    keys = [key for key in args.only.split(",") if key]
    unknown = set(keys) - {scenario.key for scenario in SCENARIOS}
    if unknown:
        print(f"lifecycle_bench: unknown scenarios {sorted(unknown)}", file=sys.stderr)
        return 2
    if Rig(args.kit).running():
        print("lifecycle_bench: the rig is running already; stop it first ($RIG/stop-all.sh)", file=sys.stderr)
        return 2
    chosen = [scenario for scenario in SCENARIOS if not keys or scenario.key in keys]
    timings = Timings()
    results = []
    started = time.monotonic()
    with node_session(kit=args.kit, checkout=args.checkout.resolve(), timings=timings) as stage:
        for scenario in chosen:
            result = run(scenario, stage)
            results.append(result)
            print(f"{scenario.key}: {result.failed} failed, {result.unchecked} unchecked, "
                  f"longest create -> Initialized {result.report.longest_initialized():.2f} s "
                  f"({result.seconds:.0f} s)", flush=True)  # fmt: skip
    total = time.monotonic() - started
    print(table(results))
    print(details(results))
    print(f"rig start {timings.start:.0f} s, image {timings.build:.0f} s, install {timings.install:.0f} s, "
          f"stop {timings.stop:.0f} s; {total:.0f} s in all")  # fmt: skip
    write_json(results, args.output, checkout=str(args.checkout.resolve()), seconds=round(total, 1),
               rig_start_s=round(timings.start, 1), image_s=round(timings.build, 1),
               install_s=round(timings.install, 1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
