"""Wall time of short `modelbooster` invocations, interpreter start included: what a shell pays.

`completion bash` is sourced from `.bashrc` by many users, so every new shell runs it; `--help` and `--version`
are the floor of a command that does nothing. Each is run `--runs` times in a fresh interpreter
(`python -m modelbooster ...` from this checkout); the figures are the minimum and the median wall time.

Usage: python bench/cli_start_bench.py [--runs 15]
Writes bench/results/cli_start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "completion bash": ["completion", "bash"],
    "--help": ["--help"],
    "--version": ["--version"],
}


def wall_times(argv: list[str], *, runs: int) -> list[float]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "modelbooster", *argv], env=environment, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    results = {}
    for label, argv in COMMANDS.items():
        times = wall_times(argv, runs=args.runs)
        results[label] = {"min_s": round(min(times), 4), "median_s": round(statistics.median(times), 4)}
        print(f"{label:>16}: min {min(times):.3f} s, median {statistics.median(times):.3f} s ({args.runs} runs)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"load average (1 min): {load}")
    out = ROOT / "bench" / "results" / "cli_start.json"
    out.write_text(json.dumps({"runs": args.runs, "load_average": load, "python": platform.python_version(),
                               "results": results}, indent=2) + "\n")  # fmt: skip
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
