"""Our admission webhook in front of the real API server.

`start_webhook` runs `modelbooster webhook` as a process with the chart's own arguments (as tests/e2e does),
adapted to loopback, serving a certificate for 127.0.0.1 signed by the cluster CA. `register_webhook` stores
the chart's Mutating/ValidatingWebhookConfiguration with `clientConfig.url` pointing at that process and the
cluster CA as `caBundle`, limited to one namespace (so tests that want the CRD's own rules alone, in other
namespaces, are not affected), under names unique to the registration; it returns once the API server
calls both webhooks (its configuration informers lag a write by up to a second).
"""

from __future__ import annotations

import base64
import copy
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from prometheus_client.parser import text_string_to_metric_families

from certs.authority import issue_serving_cert
from tests.chart.render import NAMESPACE, RELEASE, Rendered, render
from tests.e2e.harness import FULLNAME, WEBHOOK_POD, raw_request, webhook_args
from tests.e2e.kubelet import container, resolve_env, secret_mounts
from tests.e2e.processes import Process, ProcessError, free_port, http_get
from tests.realapi.controlplane import RealCluster

Obj = dict[str, Any]
KINDS: Final = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}
ADMISSION: Final = "/apis/admissionregistration.k8s.io/v1"
MODELBOOSTERS: Final = "/apis/workload.serving.volcano.sh/v1alpha1"
PROBE_EXAMPLE: Final = Path(__file__).resolve().parents[2] / "examples/single-vllm-cpu.yaml"


_rendered: Rendered | None = None


def rendered_chart() -> Rendered:
    """The chart rendered with default values, once per session (Helm rendering takes a second)."""
    global _rendered  # noqa: PLW0603  # a per-process cache of an immutable render
    if _rendered is None:
        _rendered = render(release=RELEASE, namespace=NAMESPACE)
    return _rendered


@dataclass
class WebhookServer:
    process: Process
    https_port: int
    metrics_port: int
    ca_bundle: str  # base64 PEM of the cluster CA, which signed the serving certificate

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.https_port}{path}"

    def decisions(self) -> dict[str, float]:
        """Admission decisions so far, by webhook path (from the process's /metrics)."""
        status, body = http_get(f"http://127.0.0.1:{self.metrics_port}/metrics")
        if status != 200:
            raise ProcessError(f"webhook /metrics answered {status}:\n{self.process.log_tail()}")
        counts: dict[str, float] = {}
        for family in text_string_to_metric_families(body):
            if family.name == "modelbooster_admission_decisions":
                for sample in family.samples:
                    if sample.name.endswith("_total"):
                        path = sample.labels["webhook"]
                        counts[path] = counts.get(path, 0.0) + sample.value
        return counts


@contextmanager
def start_webhook(cluster: RealCluster, workdir: Path) -> Iterator[WebhookServer]:
    rendered = rendered_chart()
    deployment = rendered.deployment("webhook")
    serving = issue_serving_cert(
        ca=cluster.ca, service=f"{FULLNAME}-webhook", namespace=NAMESPACE, extra_sans=["127.0.0.1"]
    )
    mounts: dict[str, Path] = {}
    for mount_path, secret_name in secret_mounts(deployment, "webhook").items():
        directory = workdir / secret_name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "tls.crt").write_bytes(serving.cert_pem)
        (directory / "tls.key").write_bytes(serving.key_pem)
        mounts[mount_path] = directory
    https_port, metrics_port = free_port(), free_port()
    process = Process(
        "webhook",
        webhook_args(rendered, mounts=mounts, https_port=https_port, metrics_port=metrics_port),
        env=resolve_env(container(deployment, "webhook"), pod_name=WEBHOOK_POD, namespace=NAMESPACE),
        log_dir=workdir,
    )
    try:
        process.start()
        process.wait_ready(f"http://127.0.0.1:{metrics_port}/readyz")
        yield WebhookServer(process, https_port, metrics_port, base64.b64encode(cluster.ca.cert_pem).decode())
    finally:
        process.stop()


@dataclass
class Registration:
    """Webhook configurations stored for one namespace; `remove()` deletes them."""

    server: WebhookServer
    namespace: str
    names: dict[str, str] = field(default_factory=dict)  # kind -> stored name

    def remove(self, api: Any) -> None:
        from kubernetes.client import ApiException

        for kind, name in self.names.items():
            try:
                raw_request(api, "DELETE", f"{ADMISSION}/{KINDS[kind]}/{name}")
            except ApiException as error:
                if error.status != 404:
                    raise
        self.names.clear()


def configurations_for(server: WebhookServer, *, namespace: str, suffix: str) -> list[Obj]:
    """The chart's webhook configurations as enforced (with the entries the reconciler arms them with), reached by
    URL, trusted through `caBundle`, for `namespace` only."""
    documents = []
    for kind in KINDS:
        for rendered in rendered_chart().armed():
            if rendered["kind"] != kind:
                continue
            document = copy.deepcopy(rendered)
            document["metadata"] = {"name": f"{rendered['metadata']['name']}-{suffix}"}
            for entry in document["webhooks"]:
                path = entry["clientConfig"]["service"].get("path", "/")
                entry["clientConfig"] = {"url": server.url(path), "caBundle": server.ca_bundle}
                entry["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            documents.append(document)
    return documents


def register_webhook(api: Any, server: WebhookServer, *, namespace: str, timeout: float = 15.0) -> Registration:
    registration = Registration(server=server, namespace=namespace)
    suffix = uuid.uuid4().hex[:8]
    try:
        for document in configurations_for(server, namespace=namespace, suffix=suffix):
            raw_request(api, "POST", f"{ADMISSION}/{KINDS[document['kind']]}", body=document)
            registration.names[document["kind"]] = document["metadata"]["name"]
        _wait_until_called(api, server, namespace=namespace, timeout=timeout)
    except BaseException:
        registration.remove(api)
        raise
    return registration


def _wait_until_called(api: Any, server: WebhookServer, *, namespace: str, timeout: float) -> None:
    """Dry-run creates of a valid ModelBooster until both webhooks see one (dry runs have no side effects)."""
    import yaml

    probe = yaml.safe_load(PROBE_EXAMPLE.read_text())
    probe["metadata"] = {"name": "webhook-probe", "namespace": namespace}
    before = server.decisions()
    deadline = time.monotonic() + timeout
    while True:
        raw_request(api, "POST", f"{MODELBOOSTERS}/namespaces/{namespace}/modelboosters?dryRun=All", body=probe)
        now = server.decisions()
        grown = [path for path, count in now.items() if count > before.get(path, 0.0)]
        if len(grown) >= len(KINDS):
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"the API server did not call both webhooks within {timeout}s (called: {grown})")
        time.sleep(0.1)
