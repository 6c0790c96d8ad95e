"""Memory of the reconciler's per-object bookkeeping after a long hostile run, and its cost per step.

Two structures that hostile or merely long-lived input used to grow without bound:
- Inferno's scale-down stabiliser (reconciler/inferno/stabilizer.py): one Server deciding every 100 ms (the
  shortest period) for 8 hours — 288,000 decisions — with the longest window a duration can say (~292 years), each
  decision one lower than the last and rising back every 1,000 (the sequence that keeps most history);
- foreign-field write-war bookkeeping (reconciler/runtime/foreign.py, `RemovalHistory` and `ToleratedFields`): one
  child whose field a writer re-adds with a new value 50,000 times, driven as reconciler/runtime/apply.py drives it
  (ask whether the field is fought, else remove it and record the removal); then 20,000 children in one fight each.

Figures: the structures' own memory (tracemalloc, after the run), CPU microseconds per step over the last 1,000
steps, and for the write war how many removals (writes) were made before giving up.

`--root DIR` imports the code from DIR instead of this checkout, e.g. a `git archive` of an older commit:
    mkdir /tmp/old && git archive <commit> reconciler shared process | tar -x -C /tmp/old
    python bench/bookkeeping_memory_bench.py --root /tmp/old --label before

Usage: python bench/bookkeeping_memory_bench.py [--label after] [--root DIR]
Writes bench/results/bookkeeping_memory-<label>.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DECISIONS = 288_000
WINDOW = 9.2e9  # seconds: about the longest Go duration
RE_ADDS = 50_000
CHILDREN = 20_000


def _traced(build: Any) -> tuple[Any, float]:
    """(what `build()` returns, the MiB it still holds)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    made = build()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return made, held / 2**20


def stabilizer_run() -> dict[str, Any]:
    from reconciler.inferno.stabilizer import Stabilizer

    def run() -> tuple[Stabilizer, float]:
        stabilizer = Stabilizer(window=WINDOW)
        first = 0
        if hasattr(stabilizer, "_history"):
            # The stabiliser that kept every decision: its state after all but the last 1,000 decisions is exactly
            # those decisions (and the first sight's current replicas), so it is filled directly rather than
            # through ~287,000 calls costing O(history) each (about 25 minutes of CPU).
            first = DECISIONS - 1000
            stabilizer._history.append((0.0, 500))
            stabilizer._history.extend((step * 0.1, 999 - step % 1000) for step in range(first))
        last = 0.0
        for step in range(first, DECISIONS):
            if step == DECISIONS - 1000:
                last = time.process_time()
            stabilizer.recommend(now=step * 0.1, desired=999 - step % 1000, current=500)
        return stabilizer, (time.process_time() - last) / 1000 * 1e6

    (stabilizer, per_step), mib = _traced(run)
    entries = len(stabilizer) if hasattr(stabilizer, "__len__") else len(stabilizer._history)
    return {"decisions": DECISIONS, "entries": entries, "mib": round(mib, 2), "us_per_decision": round(per_step, 2)}


def _signature(foreign: Any, path: tuple[Any, ...], value: int) -> Any:
    digest = hashlib.sha256(str(value).encode()).hexdigest()[:16]
    if hasattr(foreign, "Signature"):
        return foreign.Signature(path, "stamper", digest)
    return (path, "stamper", digest)  # the tuple apply.py built before Signature


def write_war_run() -> dict[str, Any]:
    from reconciler.runtime import foreign

    def fight(history: Any, tolerated: Any, uid: str, path: tuple[Any, ...], value: int) -> bool:
        """One reconcile after the writer re-added `path`: True when it removed it (a write)."""
        signature = _signature(foreign, path, value)
        if signature in history.fought(uid, [signature]):
            tolerated.add(uid, [path])
            return False
        history.removed(uid, [signature])
        return True

    history, tolerated = foreign.RemovalHistory(), foreign.ToleratedFields()
    path = ("spec", "template", "roles", 0, "entryTemplate", "metadata", "labels", "stamp.example.com/at")

    def one_child() -> tuple[int, float]:
        writes = 0
        last = 0.0
        for value in range(RE_ADDS):
            if value == RE_ADDS - 1000:
                last = time.process_time()
            if path in tolerated.get("one/rev"):
                continue  # given up: the walk no longer finds it
            writes += fight(history, tolerated, "one/rev", path, value)
        return writes, (time.process_time() - last) / 1000 * 1e6

    def many_children() -> None:
        for child in range(CHILDREN):
            for value in range(3):
                fight(history, tolerated, f"child-{child}/rev", ("spec", "x"), value)

    (writes, per_step), one_mib = _traced(one_child)
    _, all_mib = _traced(many_children)
    return {"re_adds": RE_ADDS, "removals_before_giving_up": writes, "one_child_mib": round(one_mib, 3),
            "us_per_re_add": round(per_step, 2), "children": CHILDREN,
            "mib": round(one_mib + all_mib, 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--root", type=Path, default=ROOT, help="import the code from this tree")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    results = {"stabilizer": stabilizer_run(), "write_war": write_war_run()}
    stab, war = results["stabilizer"], results["write_war"]
    print(f"stabiliser: {stab['decisions']} decisions -> {stab['entries']} entries, {stab['mib']} MiB, "
          f"{stab['us_per_decision']} us/decision at the end")  # fmt: skip
    print(f"write war: {war['re_adds']} re-adds with new values -> {war['removals_before_giving_up']} removals, "
          f"{war['one_child_mib']} MiB, {war['us_per_re_add']} us/re-add at the end; then {war['children']} children: "
          f"{war['mib']} MiB in all")
    out = ROOT / "bench/results" / f"bookkeeping_memory-{args.label}.json"
    document = {"python": platform.python_version(), "root": str(args.root), **results}
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
