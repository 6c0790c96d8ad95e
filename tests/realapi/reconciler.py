"""Our reconciler process against the real API server.

`running_reconciler` runs `modelbooster reconciler` with the chart's own arguments and env (as tests/e2e does),
adapted to a test: the admin kubeconfig of the real cluster, loopback metrics on a free port, short lease and
shutdown times, one namespace to watch (other tests' leftovers stay out of sight), and that namespace as its
controller namespace (the settings ConfigMap the chart renders is created there, the Lease lives there). The
certificate duty is off unless asked for: these tests register the webhook with the cluster CA themselves.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.harness import RECONCILER_POD, raw_request, reconciler_args
from tests.e2e.kubelet import container, override_flags, resolve_env
from tests.e2e.processes import Process, ProcessError, free_port, http_get
from tests.realapi.controlplane import RealCluster
from tests.realapi.webhook import rendered_chart


@dataclass
class RunningReconciler:
    process: Process
    metrics_port: int
    namespace: str
    pod_name: str  # POD_NAME, which names it in the Lease's holderIdentity

    def scrape(self) -> str:
        status, body = http_get(f"http://127.0.0.1:{self.metrics_port}/metrics")
        if status != 200:
            raise ProcessError(f"reconciler /metrics answered {status}:\n{self.process.log_tail()}")
        return body

    def check(self) -> None:
        if not self.process.running():
            raise ProcessError(
                f"{self.process.name} exited with {self.process.returncode()}:\n{self.process.log_tail()}"
            )


def install_settings(api: Any, namespace: str) -> None:
    """The chart's settings ConfigMap, in `namespace` (the controller namespace of these runs), unless there."""
    from kubernetes.client import ApiException

    for rendered in rendered_chart().of_kind("ConfigMap"):
        document = copy.deepcopy(rendered)
        document["metadata"]["namespace"] = namespace
        try:
            raw_request(api, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=document)
        except ApiException as error:
            if error.status != 409:
                raise


@contextmanager
def running_reconciler(
    cluster: RealCluster,
    *,
    namespace: str,
    workdir: Path,
    name: str = "reconciler",
    leader_elect: bool = False,
    cert_duty: bool = False,
    flags: Mapping[str, str | None] | None = None,
    controller_namespace: str = "",
    kubeconfig: Path | None = None,
) -> Iterator[RunningReconciler]:
    """Start the process, wait for /readyz, yield it; SIGTERM on exit (the exit code is not checked here).

    `controller_namespace` (default: `namespace`) holds the settings ConfigMap and the Lease, and is the pod's
    namespace; `kubeconfig` (default: the admin's) is who the process is, e.g. the chart's ServiceAccount."""
    rendered = rendered_chart()
    home = controller_namespace or namespace
    with cluster.api_client() as api:
        install_settings(api, home)
    metrics_port = free_port()
    args = reconciler_args(rendered, kubeconfig=kubeconfig or cluster.kubeconfig, metrics_port=metrics_port)
    args = override_flags(
        args,
        {
            "--namespaces": namespace,
            "--controller-namespace": home,
            "--lease-namespace": home,
            "--cert-duty": None,
            "--leader-elect": None,
            **(flags or {}),
        },
    )
    args.append("--leader-elect" if leader_elect else "--no-leader-elect")
    args.append("--cert-duty" if cert_duty else "--no-cert-duty")
    pod_name = f"{RECONCILER_POD}-{name}"
    env = resolve_env(container(rendered.deployment("reconciler"), "reconciler"), pod_name=pod_name, namespace=home)
    process = Process(name, args, env=env, log_dir=workdir)
    try:
        process.start()
        process.wait_ready(f"http://127.0.0.1:{metrics_port}/readyz", timeout=30.0)
        yield RunningReconciler(process, metrics_port, namespace, pod_name)
    finally:
        process.stop()
