"""A 10 s API server outage with 100 ModelBoosters: how loud the reconciler is, and what it writes in vain.

Runs the real process assembly (reconciler/assembly.py, the product's backoff and retry limits) in this process
against the fake API server on the same event loop, both on loopback:
1. `--boosters` ModelBoosters (one vLLM backend each) are created; after `--start-after` seconds — mid
   convergence — every new connection to the server is cut and every open watch broken (the fake's fault
   injection: the server is down), for `--outage` seconds;
2. then the server is back; the run waits until every ModelBooster is Initialized with Failed=False and the
   work queue is idle, then `--tail` seconds more.

Measured: the reconciler's log lines (all, and WARNING or worse) per second during the outage and in all; how
long after the outage every informer's watch was open again, and every ModelBooster converged (each taken on
its own); the writes the server answered (cut requests are not writes), and of them the redundant ones: creates
answered 409, and writes beyond the ideal (each child created once, each ModelBooster's status written once to
Initialized, one `Created` Event each); Failed=True status writes; and `modelbooster_event_post_failures_total`.

With `--real` (needs `KUBEBUILDER_ASSETS`, see tests/realapi/conftest.py) the same runs against a real
kube-apiserver v1.36 over etcd and our reconciler as a separate process with the chart's arguments; the
ModelBoosters are created before the reconciler starts, and `--start-after` seconds after it is ready (caches
synced) kube-apiserver is killed (SIGKILL), to be started again on the same port after `--outage` seconds. Log lines are
read from the process's log (JSON lines with timestamps), writes from its `rest_client_requests_total`.

    python bench/outage_bench.py [--boosters 100] [--outage 10] [--real] [--output bench/results/outage-100.json]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import logging
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeapi.server import FakeApiServer  # noqa: E402
from tests.reconciler.harness import (  # noqa: E402
    FAST,
    NS,
    RunningReconciler,
    backend,
    booster,
    crd_documents,
    eventually,
    overridden,
)

CHILDREN_PER_BOOSTER = 3  # ModelServing, ModelServer, ModelRoute (no autoscaling)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[float, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.INFO and record.name.startswith("reconciler"):
            self.records.append((time.monotonic(), record.levelno, record.getMessage()))


def converged(fake: FakeApiServer, names: list[str]) -> bool:
    for name in names:
        obj = fake.get("workload.serving.volcano.sh/v1alpha1", "modelboosters", name, NS) or {}
        conditions = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or ()}
        if conditions.get("Initialized") != "True" or conditions.get("Failed") != "False":
            return False
    return True


async def run(args: argparse.Namespace) -> dict[str, Any]:
    lines = Lines()
    logging.getLogger("reconciler").addHandler(lines)
    logging.getLogger("reconciler").setLevel(logging.INFO)
    async with FakeApiServer() as fake:
        for document in crd_documents():
            fake.register_crd(copy.deepcopy(document))
        fake.create_namespace(NS)
        # The product's retry behaviour (reconciler/main.py defaults), not the tests' fast one.
        settings = overridden(FAST, backoff_base=0.005, backoff_max=1000.0, retry_qps=10, retry_burst=100, workers=5)
        reconciler = RunningReconciler(fake, settings, "outage-bench")
        await reconciler.start()
        names = [f"m{i}" for i in range(args.boosters)]
        for name in names:
            fake.create(booster(name, backend("a")))
        await asyncio.sleep(args.start_after)
        watches = fake.watch_count()
        outage = fake.faults.reset_next(None)
        fake.close_watches(abort=True)
        outage_start = time.monotonic()
        await asyncio.sleep(args.outage)
        fake.faults.remove(outage)
        outage_end = time.monotonic()
        controller = reconciler.manager.controllers[0]
        reached: dict[str, float] = {}

        def settled() -> bool:
            # Each moment taken on its own: the watches back, and every ModelBooster converged.
            if "watches" not in reached and fake.watch_count() >= watches:
                reached["watches"] = time.monotonic()
            if "converged" not in reached and converged(fake, names) and len(controller.queue) == 0 \
                    and not controller.queue.processing():  # fmt: skip
                reached["converged"] = time.monotonic()
            return len(reached) == 2

        await eventually(settled, within=600.0, interval=0.02)
        watches_back, done = reached["watches"], reached["converged"]
        await asyncio.sleep(args.tail)
        writes = [e for e in reconciler.writes() if e.status]  # status 0: cut before the server saw it
        failed_status = sum(
            1 for e in writes if e.subresource == "status" and '"Failed", "status": "True"' in json.dumps(e.body)
        )
        event_failures = reconciler.metric("modelbooster_event_post_failures_total", reason="unavailable")
        await reconciler.stop()
    logging.getLogger("reconciler").removeHandler(lines)

    during = [r for r in lines.records if outage_start <= r[0] <= outage_end]
    by_kind = Counter((e.verb, f"{e.resource}/{e.subresource}" if e.subresource else e.resource, e.status)
                      for e in writes)  # fmt: skip
    creates = sum(n for (verb, res, status), n in by_kind.items() if verb == "create" and res not in ("events",)
                  and status == 201)  # fmt: skip
    status_writes = sum(n for (verb, res, _), n in by_kind.items() if res == "modelboosters/status")
    event_writes = sum(n for (_, res, _), n in by_kind.items() if res == "events")
    ideal = {"creates": args.boosters * CHILDREN_PER_BOOSTER, "status": args.boosters, "events": args.boosters}
    return {
        "boosters": args.boosters,
        "outage_seconds": round(outage_end - outage_start, 2),
        "log_lines_during_outage": len(during),
        "log_lines_per_second_during_outage": round(len(during) / (outage_end - outage_start), 2),
        "warning_lines_during_outage": sum(1 for r in during if r[1] >= logging.WARNING),
        "log_lines_total": len(lines.records),
        "warning_lines_total": sum(1 for r in lines.records if r[1] >= logging.WARNING),
        "watches_reopened_seconds_after_outage": round(watches_back - outage_end, 2),
        "converged_seconds_after_outage": round(done - outage_end, 2),
        "writes_answered": len(writes),
        "creates_answered_409": sum(n for (v, _, status), n in by_kind.items() if v == "create" and status == 409),
        "redundant_creates": creates - ideal["creates"],
        "redundant_status_writes": status_writes - ideal["status"],
        "redundant_event_writes": event_writes - ideal["events"],
        "failed_true_status_writes": failed_status,
        "event_post_failures_counted": event_failures,
        "writes_by_verb_resource_status": {f"{v} {r} {s}": n for (v, r, s), n in sorted(by_kind.items())},
    }


def run_real(args: argparse.Namespace) -> dict[str, Any]:
    import os
    import signal
    import tempfile
    from datetime import datetime

    from kubernetes import client
    from prometheus_client.parser import text_string_to_metric_families

    from tests.e2e.processes import Process
    from tests.realapi.controlplane import ControlPlane, assets_folder
    from tests.realapi.crds import apply_crds, chart_crds
    from tests.realapi.reconciler import running_reconciler

    assets = assets_folder()
    if assets is None:
        raise SystemExit("--real needs KUBEBUILDER_ASSETS (see tests/realapi/conftest.py)")
    plane = ControlPlane(assets)
    cluster = plane.start()
    namespace = "outage-bench"
    try:
        with cluster.api_client() as api:
            apply_crds(api, chart_crds())
            client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        workdir = Path(tempfile.mkdtemp(prefix="outage-bench-"))
        names = [f"m{i}" for i in range(args.boosters)]
        with cluster.api_client() as api:  # created first: the reconciler starts with all of them to do
            for name in names:
                document = booster(name, backend("a"))
                document["metadata"]["namespace"] = namespace
                client.CustomObjectsApi(api).create_namespaced_custom_object(
                    "workload.serving.volcano.sh", "v1alpha1", namespace, "modelboosters", document
                )
        with running_reconciler(cluster, namespace=namespace, workdir=workdir) as reconciler, \
                cluster.api_client() as api:  # fmt: skip
            custom = client.CustomObjectsApi(api)
            time.sleep(args.start_after)
            apiserver = next(p for p in plane.processes if p.name == "kube-apiserver" and p.running())
            outage_start = time.time()
            os.kill(apiserver.pid, signal.SIGKILL)
            apiserver.stop()  # reaps it
            time.sleep(args.outage)
            again = Process("kube-apiserver", apiserver.args, env={}, log_dir=plane.workdir,
                            program=apiserver.program)  # fmt: skip
            plane.processes.append(again)
            again.start()
            while cluster.get_raw("/readyz", timeout=1.0) != (200, "ok"):
                time.sleep(0.05)
            outage_end = time.time()

            def settled() -> bool:
                items = custom.list_namespaced_custom_object("workload.serving.volcano.sh", "v1alpha1", namespace,
                                                             "modelboosters")["items"]  # fmt: skip
                return len(items) == len(names) and all(
                    {c["type"]: c["status"] for c in (i.get("status") or {}).get("conditions") or ()}.get("Initialized")
                    == "True" for i in items)  # fmt: skip

            while not settled():
                time.sleep(0.1)
            done = time.time()
            time.sleep(args.tail)
            requests: Counter[tuple[str, str]] = Counter()
            for family in text_string_to_metric_families(reconciler.scrape()):
                if family.name == "rest_client_requests":
                    for sample in family.samples:
                        if sample.name.endswith("_total") and sample.labels["method"] in ("POST", "PATCH", "PUT",
                                                                                         "DELETE"):  # fmt: skip
                            requests[(sample.labels["method"], sample.labels["code"])] += int(sample.value)
            records = []
            for line in reconciler.process.log_path.read_text(errors="replace").splitlines():
                try:
                    record = json.loads(line)
                    records.append((datetime.fromisoformat(record["ts"]).timestamp(), str(record["level"])))
                except (ValueError, KeyError, TypeError):
                    continue
    finally:
        plane.stop()
    during = [r for r in records if outage_start <= r[0] <= outage_end]
    warning = ("warning", "error", "critical")
    return {
        "target": "kube-apiserver v1.36 (KUBEBUILDER_ASSETS), reconciler process",
        "boosters": args.boosters,
        "outage_seconds": round(outage_end - outage_start, 2),
        "log_lines_during_outage": len(during),
        "log_lines_per_second_during_outage": round(len(during) / (outage_end - outage_start), 2),
        "warning_lines_during_outage": sum(1 for r in during if r[1] in warning),
        "log_lines_total": len(records),
        "warning_lines_total": sum(1 for r in records if r[1] in warning),
        "converged_seconds_after_outage": round(done - outage_end, 2),
        "creates_answered_409": requests.get(("POST", "409"), 0),
        "writes_by_method_code": {f"{m} {c}": n for (m, c), n in sorted(requests.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boosters", type=int, default=100)
    parser.add_argument("--outage", type=float, default=10.0)
    parser.add_argument("--start-after", type=float, default=0.3, help="seconds after the creates")
    parser.add_argument("--tail", type=float, default=2.0)
    parser.add_argument("--real", action="store_true", help="a real kube-apiserver, killed and restarted")
    parser.add_argument("--output", type=Path, default=Path("bench/results/outage-100.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # the figures, not the lines themselves
    result = run_real(args) if args.real else asyncio.run(run(args))
    for key, value in result.items():
        print(f"{key}: {value}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
