"""CPU of the managedFields walk behind foreign-field removal (reconciler/runtime/foreign.py) as a child grows.

The child is a ModelServing-shaped object whose engine container carries N environment entries, a list keyed
by `name` (`k:{"name":"VAR_i"}` in managedFields), each set by another field manager (`kubectl-edit`): someone
re-applied an exported copy of the child, so they own every item, all but the last ten with our own value (no
finding: the walk must visit them all), and those ten with another value. A second manager owns the
same items again (server-side apply co-ownership), so the walk meets every key twice. Sizes are those of the
child's JSON (managedFields included), from 64 KiB to `--max-kib` (default 1 MiB).

The figure per size is the best of `--repeat` runs of `find_foreign` (process CPU time), plus the findings
count, so a walk that stops early by its bound is visible. Linear means: time per KiB roughly constant.

Usage: python bench/foreign_walk_bench.py [--max-kib 1024] [--repeat 3] [--label after]
Writes bench/results/foreign_walk-<label>.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconciler.runtime.foreign import find_foreign  # noqa: E402

VALUE = "v" * 64


def child(entries: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(live, desired) with `entries` foreign env entries."""
    env = [{"name": f"VAR_{i}", "value": f"{VALUE}{i}"} for i in range(entries)]
    desired_env = [dict(item) for item in env]
    for item in desired_env[-10:]:
        item["value"] = "ours"
    owned_items = {f'k:{{"name":"VAR_{i}"}}': {".": {}, "f:name": {}, "f:value": {}} for i in range(entries)}
    path = {"f:template": {"f:roles": {'k:{"name":"leader"}': {"f:entryTemplate": {"f:spec": {"f:containers": {
        'k:{"name":"engine"}': {"f:env": owned_items}}}}}}}}  # fmt: skip

    def spec(env_list: list[dict[str, Any]]) -> dict[str, Any]:
        container = {"name": "engine", "image": "vllm", "env": env_list}
        return {"replicas": 1, "template": {"roles": [{"name": "leader", "entryTemplate": {"spec": {
            "containers": [container]}}}]}}  # fmt: skip

    managed = [
        {"manager": manager, "operation": "Apply", "fieldsV1": {"f:spec": path}}
        for manager in ("kubectl-edit", "policy-engine")
    ]
    live = {"metadata": {"name": "m-a", "uid": "u", "managedFields": managed}, "spec": spec(env)}
    desired = {"metadata": {"name": "m-a"}, "spec": spec(desired_env)}
    return live, desired


def entries_for(kib: int) -> int:
    """How many entries make a child of about `kib` KiB."""
    one = len(json.dumps(child(100)[0])) / 100
    return max(1, int(kib * 1024 / one))


def measure(kib: int, repeat: int) -> dict[str, Any]:
    live, desired = child(entries_for(kib))
    size = len(json.dumps(live))
    best = float("inf")
    findings = 0
    for _ in range(repeat):
        started = time.process_time()
        findings = len(find_foreign(live, desired, manager="modelbooster"))
        best = min(best, time.process_time() - started)
    return {"kib": round(size / 1024, 1), "seconds": round(best, 4), "findings": findings,
            "ms_per_kib": round(best * 1000 / (size / 1024), 4)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-kib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    sizes = []
    kib = 64
    while kib <= args.max_kib:
        sizes.append(kib)
        kib *= 2
    results = []
    for size in sizes:
        result = measure(size, args.repeat)
        results.append(result)
        print(f"{result['kib']:>8} KiB  {result['seconds']:>9.4f} s  {result['ms_per_kib']:>8.4f} ms/KiB  "
              f"{result['findings']} findings", flush=True)  # fmt: skip
    out = ROOT / "bench/results" / f"foreign_walk-{args.label}.json"
    out.write_text(json.dumps({"python": platform.python_version(), "results": results}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
