"""Time from a child CRD's creation to convergence: ModelBoosters waiting for a kind the cluster did not serve.

On a real kube-apiserver v1.36 (`KUBEBUILDER_ASSETS`, see ../shared/envtest) or, with `--fake`, on the fake API
server: the ModelBooster CRD and Kthena v0.1.0's child CRDs *without* the AutoscalingPolicyBinding CRD are
installed, our reconciler process runs (`modelbooster reconciler`, one namespace), `--boosters` ModelBoosters
with backend-level autoscaling are created and reported `Failed` (`KindNotServed`). Then the Binding CRD is
created, and the time is taken from that POST until every ModelBooster is `Initialized=True` and `Failed=False`
(polled every 50 ms), and until the CRD itself is Established, for comparison. Repeated `--repeats` times, the
CRD deleted in between (which sends every ModelBooster back to `KindNotServed`).

    python bench/crd_appearance_bench.py [--boosters 50] [--repeats 3] [--fake] [--show-log]

What to expect on kube-apiserver v1.36: the reconciler sees the CRD served and has the kind's cache filled
within ~10 ms of it being Established (its log); the first write of an object of a kind whose CRD was just
created takes the API server itself ~2 s (a bare POST measured the same), so one ModelBooster converges ~2.1 s
after the CRD's creation. The fake has no such delay.

Prints each run and the median, and writes bench/results/crd-appearance[-fake].json.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.harness import raw_request  # noqa: E402
from tests.realapi.controlplane import ControlPlane, assets_folder  # noqa: E402
from tests.realapi.crds import CHART, CRD_PATH, apply_crds, delete_crds  # noqa: E402
from tests.realapi.reconciler import running_reconciler  # noqa: E402
from tests.reconciler.harness import backend, booster  # noqa: E402
from tests.reconciler.kthena_crds import binding_crd, child_crds  # noqa: E402

NAMESPACE = "crd-bench"
BINDING = "autoscalingpolicybindings.workload.serving.volcano.sh"
POLICY = {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]}


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or ()}


def _states(api: Any) -> list[dict[str, str]]:
    listed = raw_request(api, "GET", f"/apis/workload.serving.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/modelboosters")
    return [_conditions(item) for item in listed["items"]]


def _all_failed(api: Any, boosters: int) -> bool:
    states = _states(api)
    return len(states) == boosters and all(state.get("Failed") == "True" for state in states)


def _wait(api: Any, what: str, check: Any, *, within: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within:
        if check():
            return time.monotonic()
        time.sleep(0.05)
    raise TimeoutError(f"{what} not reached in {within}s")


@contextlib.contextmanager
def _cluster(fake: bool) -> Iterator[Any]:
    """A RealCluster-like object (`kubeconfig`, `api_client()`) for the real server or the fake."""
    if fake:
        from tests.fakeapi.server import FakeApiServer

        server = FakeApiServer()
        server.start_in_thread()
        try:
            with tempfile.TemporaryDirectory() as folder:
                kubeconfig = server.write_kubeconfig(Path(folder) / "kubeconfig")

                class Fake:
                    def __init__(self) -> None:
                        self.kubeconfig = kubeconfig

                    def api_client(self) -> Any:
                        from kubernetes import client

                        return client.ApiClient(server.configuration())

                yield Fake()
        finally:
            server.stop_thread()
        return
    assets = assets_folder()
    if assets is None:
        raise SystemExit(
            'KUBEBUILDER_ASSETS is not set (export KUBEBUILDER_ASSETS="$(../shared/envtest/setup)"), or use --fake'
        )
    plane = ControlPlane(assets)
    try:
        yield plane.start()
    finally:
        plane.stop()


def run(args: argparse.Namespace) -> dict[str, Any]:
    runs: list[dict[str, float]] = []
    with _cluster(args.fake) as cluster, cluster.api_client() as api, tempfile.TemporaryDirectory() as workdir:
        raw_request(api, "POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
        # The chart's own CRDs (ModelBooster, Inferno), and the child CRDs without the Binding.
        own = [yaml.safe_load(path.read_text()) for path in sorted((CHART / "crds").glob("*.yaml"))]
        apply_crds(api, [*own, *child_crds("v0.1", binding=False)])
        with running_reconciler(cluster, namespace=NAMESPACE, workdir=Path(workdir)) as reconciler:
            for index in range(args.boosters):
                obj = booster(f"m{index}", backend("a", minReplicas=1, maxReplicas=3, autoscalingPolicy=POLICY))
                obj["metadata"]["namespace"] = NAMESPACE
                raw_request(
                    api,
                    "POST",
                    f"/apis/workload.serving.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/modelboosters",
                    body=obj,
                )
            for repeat in range(args.repeats):
                _wait(api, "every ModelBooster KindNotServed", lambda: _all_failed(api, args.boosters), within=120)
                started = time.monotonic()
                raw_request(api, "POST", CRD_PATH, body=copy.deepcopy(binding_crd("v0.1")))
                established = _wait(
                    api,
                    "the CRD Established",
                    lambda: _conditions(raw_request(api, "GET", f"{CRD_PATH}/{BINDING}")).get("Established") == "True",
                    within=60,
                )
                converged = _wait(
                    api,
                    "every ModelBooster converged",
                    lambda: all(s.get("Initialized") == "True" and s.get("Failed") == "False" for s in _states(api)),
                    within=120,
                )
                figures = {"established_s": established - started, "converged_s": converged - started}
                runs.append(figures)
                print(f"run {repeat + 1}: Established after {figures['established_s']:.2f}s, all {args.boosters} "
                      f"ModelBoosters converged after {figures['converged_s']:.2f}s")  # fmt: skip
                if args.show_log:
                    print(reconciler.process.log_tail(60))
                delete_crds(api, [BINDING], timeout=60)
    median = statistics.median(r["converged_s"] for r in runs)
    print(f"median: CRD created -> {args.boosters} ModelBoosters converged in {median:.2f}s")
    return {
        "server": "fake" if args.fake else "kube-apiserver v1.36 (KUBEBUILDER_ASSETS)",
        "boosters": args.boosters,
        "runs": runs,
        "median_converged_s": median,
        "machine": platform.platform(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boosters", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fake", action="store_true", help="the fake API server instead of a real kube-apiserver")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--show-log", action="store_true", help="print the reconciler's log after each run")
    args = parser.parse_args()
    result = run(args)
    output = args.output or ROOT / "bench/results" / f"crd-appearance{'-fake' if args.fake else ''}.json"
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")


if __name__ == "__main__":
    main()
