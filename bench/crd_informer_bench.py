"""Peak memory of the reconciler's CRD informer (reconciler/runtime/discovery.py) on a cluster of large CRDs.

Setup: the fake API server (`python -m tests.fakeapi`, its own process) holds `--crds` CustomResourceDefinitions
of about `--crd-kib` KiB each (a schema of many described properties, as Crossplane providers' are), none of a
group the reconciler keeps whole. A separate measuring process (this file with `--child`) builds what
`modelbooster reconciler` builds for discovery — a Manager and a `CrdDiscovery` for our groups — runs it until
the first list is complete, and reports its resident set: before starting, the peak (VmHWM) while listing, and
after. The figure is the peak over the baseline: what listing large CRDs costs on top of an idle process.

Usage: python bench/crd_informer_bench.py [--crds 200] [--crd-kib 1024] [--label after]
Writes bench/results/crd_informer-<label>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

GROUPS = ("workload.serving.volcano.sh", "networking.serving.volcano.sh", "inferno.platform.ai")


def large_crd(index: int, kib: int) -> dict[str, Any]:
    description = "Some provider field, described at length as generated API references are. " * 3
    per_property = len(json.dumps({"type": "string", "description": description})) + 20
    count = max(1, kib * 1024 // per_property)
    properties = {f"field{i:05d}": {"type": "string", "description": description} for i in range(count)}
    group = f"provider{index}.bench.example.com"
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Thing", "plural": "things", "singular": "thing", "listKind": "ThingList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


async def child(url: str) -> None:
    """The measuring process: discovery as the reconciler runs it, until synced."""
    from reconciler.runtime.client import KubeClient
    from reconciler.runtime.discovery import CrdDiscovery
    from reconciler.runtime.manager import Manager, ManagerOptions
    from reconciler.runtime.metrics import Metrics

    client = KubeClient.for_url(url, user_agent="crd-informer-bench")
    manager = Manager(client, options=ManagerOptions(leader_elect=False, resync_period=0), metrics=Metrics())
    discovery = CrdDiscovery(manager, groups=GROUPS)
    baseline = status_kib(os.getpid(), "VmRSS")
    stop = asyncio.Event()
    started = time.monotonic()
    task = asyncio.create_task(manager.run(stop))
    await discovery.wait_synced()
    seconds = time.monotonic() - started
    pid = os.getpid()
    result = {"baseline_kib": baseline, "peak_kib": status_kib(pid, "VmHWM"), "after_kib": status_kib(pid, "VmRSS"),
              "crds_seen": len(discovery.crds()), "seconds": round(seconds, 2)}  # fmt: skip
    stop.set()
    await task
    await client.close()
    print(json.dumps(result), flush=True)


async def create_crds(url: str, *, count: int, kib: int) -> float:
    started = time.monotonic()
    async with aiohttp.ClientSession() as session:
        for index in range(count):
            body = json.dumps(large_crd(index, kib))
            async with session.post(f"{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", data=body,
                                    headers={"Content-Type": "application/json"}) as response:  # fmt: skip
                if response.status != 201:
                    raise RuntimeError(f"creating CRD {index}: HTTP {response.status}: {(await response.text())[:300]}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crds", type=int, default=200)
    parser.add_argument("--crd-kib", type=int, default=1024)
    parser.add_argument("--label", default="after")
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args.child))
        return
    with tempfile.TemporaryDirectory(prefix="crd-informer-bench-") as workdir:
        command = [sys.executable, "-m", "tests.fakeapi", "--kubeconfig", str(Path(workdir) / "kubeconfig")]
        fake = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            assert fake.stdout is not None
            url = json.loads(fake.stdout.readline())["url"]
            made = asyncio.run(create_crds(url, count=args.crds, kib=args.crd_kib))
            print(f"created {args.crds} CRDs of ~{args.crd_kib} KiB in {made:.1f}s", flush=True)
            measured = subprocess.run([sys.executable, __file__, "--child", url], cwd=ROOT, capture_output=True,
                                      text=True, check=True)  # fmt: skip
            result = json.loads(measured.stdout.strip().splitlines()[-1])
        finally:
            fake.terminate()
            fake.wait(60)
    result["peak_over_baseline_mib"] = round((result["peak_kib"] - result["baseline_kib"]) / 1024, 1)
    result["after_over_baseline_mib"] = round((result["after_kib"] - result["baseline_kib"]) / 1024, 1)
    print(f"{args.crds} CRDs of ~{args.crd_kib} KiB: baseline {result['baseline_kib'] / 1024:.1f} MiB, peak "
          f"{result['peak_kib'] / 1024:.1f} MiB (+{result['peak_over_baseline_mib']} MiB), after sync "
          f"{result['after_kib'] / 1024:.1f} MiB; {result['crds_seen']} CRDs seen in {result['seconds']}s")  # fmt: skip
    out = ROOT / "bench/results" / f"crd_informer-{args.label}.json"
    out.write_text(json.dumps({"python": platform.python_version(), "crds": args.crds, "crd_kib": args.crd_kib,
                               **result}, indent=2) + "\n")  # fmt: skip
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
