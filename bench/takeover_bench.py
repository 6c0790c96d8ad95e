"""What a takeover of many ModelBoosters writes: our reconciler starting in a cluster whose children another
controller wrote (docs/design/reconciler.md §16).

On the fake API server (in this process, with the reconciler the tests run: reconciler.assembly.build), for each
source — Kthena v0.1.0, v0.4.0 (v0.2.0-v0.4.0) and v1.0.0, whose child CRDs are served and whose children are
written as that release's controller writes them (tests/takeover/kthena.py), and modelbooster 0.2.0 (our CRDs,
the children it rendered: tests/takeover/rendered_0_2_0) — `--boosters` ModelBoosters (the ModelBooster of
tests/takeover/boosters for that source, renamed) are seeded, then the reconciler starts. Measured:
- the time until every one is Initialized (and not Failed);
- the reconciler's write requests until then, by kind and verb (from the fake's request log);
- template writes: ModelServings whose `metadata.generation` moved (a spec write; every pod of such a
  ModelServing would restart under Kthena's ModelServing controller);
- its writes during `--idle` seconds with a full resync every `--resync` seconds.

    python bench/takeover_bench.py [--boosters 100] [--idle 5] [--resync 1]

Prints the figures and writes bench/results/takeover-<boosters>.json (or `--output`). Goals: no template write,
0 writes while idle. Tests never assert these figures; tests/reconciler/test_takeover.py checks the behaviour.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_SERVING, child_kind_of  # noqa: E402
from reconciler.runtime.client import KubeClient  # noqa: E402
from tests.fakeapi.server import FakeApiServer  # noqa: E402
from tests.reconciler.harness import FAST, RunningReconciler, overridden  # noqa: E402
from tests.reconciler.kthena_crds import child_crds, model_booster_crd  # noqa: E402
from tests.takeover import kthena  # noqa: E402

NS: Final = "takeover"
USER: Final = "takeover-bench"
# source -> (child CRDs served, the booster of tests/takeover/boosters)
SOURCES: Final = {
    "v0.1.0": ("v0.1", "v01"),
    "v0.4.0": ("v0.2", "v04"),
    "v1.0.0": ("v1.0", "v1"),
    "0.2.0": ("v0.1", "v04"),
}


async def _seed(fake: FakeApiServer, client: KubeClient, source: str, boosters: int) -> dict[str, int]:
    """Create the ModelBoosters and the children their previous controller wrote; ModelServing generations."""
    crds, name = SOURCES[source]
    for crd in child_crds(crds):
        fake.register_crd(copy.deepcopy(crd))
    manager = "modelbooster" if source == "0.2.0" else "kthena-controller-manager"
    generations: dict[str, int] = {}
    for index in range(boosters):
        written = kthena.booster(name, NS)
        original = written["metadata"]["name"]
        written["metadata"]["name"] = f"{original}-{index}"
        created = fake.create(written)
        uid = created["metadata"]["uid"]
        if source == "0.2.0":
            rendered = kthena.rendered_0_2_0(name, uid=uid, namespace=NS, model=f"{original}-{index}")
            children = [child for child in rendered if child["kind"] != "ModelBooster"]
        else:
            children = kthena.children({**written, "metadata": created["metadata"]}, generation=source, uid=uid)
        for child in children:
            kind = child_kind_of(child)
            assert kind is not None
            stored = await client.create(kind, child, field_manager=manager)
            if kind == MODEL_SERVING:
                generations[stored["metadata"]["name"]] = stored["metadata"]["generation"]
    return generations


async def _boosters_converged(client: KubeClient, boosters: int) -> bool:
    listed = await client.list(MODEL_BOOSTER, namespace=NS)
    done = 0
    for obj in listed.items:
        conditions = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or ()}
        done += conditions.get("Initialized") == "True" and conditions.get("Failed") == "False"
    return done == boosters


async def _run(source: str, args: argparse.Namespace) -> dict[str, Any]:
    fake = FakeApiServer()
    await fake.start()
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent=USER)
    try:
        fake.register_crd(model_booster_crd())
        fake.create_namespace(NS)
        generations = await _seed(fake, client, source, args.boosters)
        fake.requests.clear()
        reconciler = RunningReconciler(fake, overridden(FAST, resync_period=args.resync), "bench")
        started = time.monotonic()
        await reconciler.start()
        while not await _boosters_converged(client, args.boosters):
            if time.monotonic() - started > args.timeout:
                raise TimeoutError(f"{source}: not every ModelBooster converged within {args.timeout}s")
            await asyncio.sleep(0.05)
        converged = time.monotonic() - started
        await asyncio.sleep(0.5)  # the last status and event writes land
        takeover = reconciler.writes()
        by_kind = Counter(f"{entry.resource} {entry.verb}" for entry in takeover)
        posted = [entry.body or {} for entry in takeover if entry.resource == "events" and entry.verb == "create"]
        reasons = Counter(str(event.get("reason")) for event in posted)
        moved = 0
        for serving, generation in generations.items():
            stored = fake.get(MODEL_SERVING.api_version, MODEL_SERVING.plural, serving, NS) or {}
            moved += stored.get("metadata", {}).get("generation") != generation
        mark = len(reconciler.writes())
        await asyncio.sleep(args.idle)
        idle = len(reconciler.writes()) - mark
        await reconciler.stop()
    finally:
        await client.close()
        await fake.stop()
    return {
        "source": source,
        "boosters": args.boosters,
        "seconds_to_converged": round(converged, 2),
        "writes": len(takeover),
        "writes_by_kind": dict(sorted(by_kind.items())),
        "events_by_reason": dict(sorted(reasons.items())),
        "template_writes": moved,
        "idle_seconds": args.idle,
        "resync_seconds": args.resync,
        "idle_writes": idle,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boosters", type=int, default=100)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of quiet measured after convergence")
    parser.add_argument("--resync", type=float, default=1.0, help="seconds between full resyncs meanwhile")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--sources", default=",".join(SOURCES), help=f"comma-separated, of {', '.join(SOURCES)}")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    results = []
    for source in args.sources.split(","):
        result = asyncio.run(_run(source.strip(), args))
        results.append(result)
        kinds = ", ".join(f"{kind}: {count}" for kind, count in result["writes_by_kind"].items())
        print(f"{source}: {result['boosters']} ModelBoosters converged in {result['seconds_to_converged']} s with "
              f"{result['writes']} writes ({kinds}; events: {result['events_by_reason']}); "
              f"template writes: {result['template_writes']} "
              f"(goal 0: {'met' if result['template_writes'] == 0 else 'NOT met'}); writes in "
              f"{result['idle_seconds']:.0f} s idle, resync every {result['resync_seconds']} s: "
              f"{result['idle_writes']} (goal 0: {'met' if result['idle_writes'] == 0 else 'NOT met'})")  # fmt: skip
    document = {"machine": platform.node(), "python": platform.python_version(), "results": results}
    output = args.output or ROOT / "bench/results" / f"takeover-{args.boosters}.json"
    output.write_text(json.dumps(document, indent=2) + "\n")
    print(f"written to {output}")


if __name__ == "__main__":
    main()
