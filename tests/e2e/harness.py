"""A cluster for end-to-end tests: the fake API server, the rendered chart installed into it, and our two
processes running for real with the chart's own command lines.

`start_cluster(workdir)` does what `helm install` plus a node would do:
1. renders the chart (default values: self-signed certificates, leader election, every namespace);
2. serves the fake API server on a loopback port (on a thread of the test process, so tests can read its
   request log) and, as a user with kubectl would, creates the chart's CRDs, the release namespace and the
   rendered objects the fake stores (the webhook configurations and the settings ConfigMap);
3. plays the kubelet for the two Deployments: resolves their downward-API env, projects the webhook's TLS
   Secret volume into a directory (kept in sync like a Secret volume), rewrites the mounted paths in their
   arguments to that directory, and maps their named container ports to free loopback ports, which is
   where the webhook Service (looked up from the webhook configurations, as the API server does) is routed;
4. starts `modelbooster reconciler` and `modelbooster webhook` as subprocesses with the rendered arguments,
   adapted only where a laptop differs from a pod (loopback addresses, free ports, a kubeconfig file, short
   lease and shutdown times, a fast certificate-file poll) — see `reconciler_args` / `webhook_args`;
5. waits for both `/readyz`. The webhook can only become ready once the reconciler's certificate duty has
   written the TLS Secret and the kubelet step has projected it, so a ready cluster has already run the
   whole certificate bootstrap;
6. plays the EndpointSlice controller: once the webhook is ready, the webhook Service gets a slice with one
   ready endpoint, and the harness waits until the reconciler has armed both webhook configurations (written
   their entries with the caBundle: docs/design/webhook.md §7).

Requests are told apart by User-Agent: the reconciler names itself `modelbooster-reconciler (<pod>)`, the
test's user client `USER_AGENT`; the webhook is given no credentials at all (the chart mounts no token).
"""

from __future__ import annotations

import copy
import functools
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import yaml

from tests.chart.render import NAMESPACE, RELEASE, Rendered, container_args, render
from tests.e2e.kubelet import (
    SecretVolume,
    container,
    override_flags,
    remap_paths,
    resolve_env,
    secret_mounts,
)
from tests.e2e.processes import Process, ProcessError, free_port, http_get
from tests.fakeapi.reqlog import LoggedRequest
from tests.fakeapi.server import FakeApiServer

Obj = dict[str, Any]
T = TypeVar("T")

FULLNAME: Final = f"{RELEASE}-modelbooster"
USER_AGENT: Final = "kubectl-e2e/v1.32 (test user)"
RECONCILER_AGENT_PREFIX: Final = "modelbooster-reconciler"
RECONCILER_POD: Final = f"{FULLNAME}-reconciler-5d8f7c9b4-e2e01"
WEBHOOK_POD: Final = f"{FULLNAME}-webhook-6c4d8b7f5-e2e01"
RECONCILER_SA: Final = f"{FULLNAME}-reconciler"
WEBHOOK_SA: Final = f"{FULLNAME}-webhook"
TLS_SECRET: Final = f"{FULLNAME}-webhook-tls"
CA_SECRET: Final = f"{FULLNAME}-webhook-ca"
USER_NAMESPACES: Final = ("llm", "e2e")

# Rendered kinds and what the harness does with them. Every rendered object must be in one of the two
# groups, so a kind added to the chart is noticed here instead of being silently left out.
STORED_KINDS: Final = frozenset(
    {"ConfigMap", "Secret", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
)
HARNESS_KINDS: Final = {
    "Deployment": "run as local processes with the rendered args, env and volumes",
    "Service": "the webhook Service is routed to the webhook's local port; metrics Services are scraped directly",
    "ServiceAccount": "identities: each process's requests are attributed by User-Agent",
    "ClusterRole": "compared with the recorded requests by test_rbac.py",
    "ClusterRoleBinding": "compared with the recorded requests by test_rbac.py",
    "Role": "compared with the recorded requests by test_rbac.py",
    "RoleBinding": "compared with the recorded requests by test_rbac.py",
    "PodDisruptionBudget": "no evictions happen in a single-process test",
}


class HarnessError(Exception):
    """The cluster could not be brought up; the message says which step and carries process logs."""


def wait_for(check: Callable[[], T | None], *, timeout: float = 10.0, what: str, period: float = 0.05) -> T:
    """Poll `check` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
        time.sleep(period)


@dataclass
class Ports:
    reconciler_metrics: int
    webhook_https: int
    webhook_metrics: int


@dataclass
class Cluster:
    fake: FakeApiServer
    rendered: Rendered
    workdir: Path
    ports: Ports
    reconciler: Process
    webhook: Process
    tls_volume: SecretVolume
    user: Any  # kubernetes.client.ApiClient of the test user (kubectl)
    _stack: ExitStack = field(repr=False, default_factory=ExitStack)
    exit_codes: dict[str, int | None] = field(default_factory=dict)  # filled by stop()

    # ---- reading the cluster -------------------------------------------------------------------------

    def get(self, api_version: str, plural: str, name: str, namespace: str = "") -> Obj | None:
        """The stored object, read from the fake's store (no request is logged)."""
        return self.fake.get(api_version, plural, name, namespace)

    def metrics_url(self, component: str) -> str:
        port = self.ports.reconciler_metrics if component == "reconciler" else self.ports.webhook_metrics
        return f"http://127.0.0.1:{port}/metrics"

    def scrape(self, component: str) -> str:
        status, body = http_get(self.metrics_url(component))
        if status != 200:
            raise AssertionError(f"{component} /metrics answered {status}")
        return body

    def requests_of(self, identity: str) -> list[LoggedRequest]:
        return [entry for entry in self.fake.requests.entries() if identity_of(entry) == identity]

    def check_processes(self) -> None:
        """Fail with the log when a process died or the kubelet step stopped syncing."""
        for process in (self.reconciler, self.webhook):
            if not process.running():
                raise HarnessError(f"{process.name} exited with {process.returncode()}:\n{process.log_tail()}")
        self.tls_volume.check()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.log_tail(60)}" for p in (self.reconciler, self.webhook))

    # ---- teardown -----------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop both processes (SIGTERM first), the kubelet step and the fake; keep the exit codes."""
        if self.exit_codes:
            return
        self.exit_codes = {"webhook": self.webhook.stop(), "reconciler": self.reconciler.stop()}
        self._stack.close()


def identity_of(entry: LoggedRequest) -> str:
    """Who sent a request: "reconciler", "user", or "unknown" (which no test expects to see)."""
    if entry.user_agent.startswith(RECONCILER_AGENT_PREFIX):
        return "reconciler"
    if entry.user_agent == USER_AGENT:
        return "user"
    return "unknown"


# ---- installing the chart ------------------------------------------------------------------------------


def user_client(fake: FakeApiServer) -> Any:
    from kubernetes import client

    api = client.ApiClient(fake.configuration())
    api.user_agent = USER_AGENT
    return api


def raw_exchange(
    api: Any, method: str, path: str, *, body: Any = None, content_type: str = "application/json"
) -> tuple[Any, list[tuple[str, str]]]:
    """One request through the user's client without client-side typing (kubectl's generic path): the decoded
    JSON answer and the response headers. Errors raise `kubernetes.client.ApiException` like typed calls."""
    from kubernetes.client import ApiException

    serialized = api.param_serialize(
        method,
        path,
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*serialized)
    response.read()
    if not 200 <= response.status < 300:
        raise ApiException(http_resp=response)
    headers = list(response.response.headers.items())
    return (json.loads(response.data) if response.data else None), headers


def raw_request(api: Any, method: str, path: str, *, body: Any = None, content_type: str = "application/json") -> Any:
    return raw_exchange(api, method, path, body=body, content_type=content_type)[0]


def _create(api: Any, obj: Mapping[str, Any]) -> None:
    """POST one object the way `kubectl create -f` does."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    plurals = {
        "CustomResourceDefinition": "customresourcedefinitions",
        "Namespace": "namespaces",
        "ConfigMap": "configmaps",
        "Secret": "secrets",
        "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
        "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
        "EndpointSlice": "endpointslices",
    }
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    namespace = obj.get("metadata", {}).get("namespace")
    path = f"{prefix}/namespaces/{namespace}/{plurals[kind]}" if namespace else f"{prefix}/{plurals[kind]}"
    raw_request(api, "POST", path, body=obj)


def install(fake: FakeApiServer, rendered: Rendered, api: Any) -> None:
    unknown = {obj["kind"] for obj in rendered.objects} - STORED_KINDS - set(HARNESS_KINDS)
    if unknown:
        raise HarnessError(f"the chart renders kinds the e2e harness does not handle: {sorted(unknown)}")
    for crd in rendered.crds:
        _create(api, copy.deepcopy(crd))
    for namespace in (NAMESPACE, *USER_NAMESPACES):
        _create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for obj in rendered.objects:
        if obj["kind"] in STORED_KINDS:
            _create(api, obj)


def route_webhook_service(fake: FakeApiServer, rendered: Rendered, *, https_port: int) -> None:
    """Send the API server's webhook calls to the local webhook, following Service -> named container port."""
    webhook = rendered.deployment("webhook")
    container_ports = {p["name"]: p["containerPort"] for p in container(webhook, "webhook").get("ports") or ()}
    local = {container_ports["https"]: https_port}
    for configuration in rendered.armed():
        for entry in configuration["webhooks"]:
            ref = entry["clientConfig"]["service"]
            service = rendered.one("Service", ref["name"])
            (port,) = [p for p in service["spec"]["ports"] if p["port"] == ref.get("port", 443)]
            target = port["targetPort"]
            container_port = container_ports[target] if isinstance(target, str) else int(target)
            fake.route_service(
                namespace=ref["namespace"], name=ref["name"], port=port["port"], to=("127.0.0.1", local[container_port])
            )


def publish_ready_endpoint(api: Any, rendered: Rendered) -> None:
    """What the EndpointSlice controller writes for the webhook Service once the webhook pod is ready."""
    service = rendered.one("Service", f"{FULLNAME}-webhook")
    _create(
        api,
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{service['metadata']['name']}-e2e01",
                "namespace": NAMESPACE,
                "labels": {"kubernetes.io/service-name": service["metadata"]["name"]},
            },
            "addressType": "IPv4",
            "endpoints": [
                {
                    "addresses": ["127.0.0.1"],
                    "conditions": {"ready": True, "serving": True, "terminating": False},
                    "targetRef": {"kind": "Pod", "name": WEBHOOK_POD, "namespace": NAMESPACE},
                }
            ],
            "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}],
        },
    )


def armed(fake: FakeApiServer, rendered: Rendered) -> bool:
    """Every webhook configuration carries its entries, each with a caBundle."""
    for configuration in rendered.armed():
        plural = configuration["kind"].lower() + "s"
        stored = fake.get("admissionregistration.k8s.io/v1", plural, configuration["metadata"]["name"])
        entries = (stored or {}).get("webhooks") or []
        if len(entries) != len(configuration["webhooks"]) or not all(
            entry.get("clientConfig", {}).get("caBundle") for entry in entries
        ):
            return False
    return True


# ---- the two processes ---------------------------------------------------------------------------------


def reconciler_args(rendered: Rendered, *, kubeconfig: Path, metrics_port: int) -> list[str]:
    """The chart's reconciler arguments, adapted to a laptop: loopback metrics on a free port, a kubeconfig
    instead of the in-cluster token, and short lease/shutdown times so a test run stays in seconds."""
    args = container_args(rendered.deployment("reconciler"), "reconciler")
    return override_flags(
        args,
        {
            "--kubeconfig": str(kubeconfig),
            "--metrics-bind-address": "127.0.0.1",
            "--metrics-port": str(metrics_port),
            "--lease-duration": "3",
            "--renew-deadline": "2",
            "--retry-period": "0.2",
            "--shutdown-timeout": "3",
            "--shutdown-delay": "0",
            "--webhook-arm-delay": "0.2",
        },
    )


def webhook_args(rendered: Rendered, *, mounts: Mapping[str, Path], https_port: int, metrics_port: int) -> list[str]:
    """The chart's webhook arguments with the mounted paths moved to the projected directory, both listeners
    on loopback ports, no readiness-drain delay at shutdown, and a certificate-file poll of 0.1 s (the chart
    relies on the default 10 s, which is fine next to a kubelet that syncs every minute)."""
    args = remap_paths(container_args(rendered.deployment("webhook"), "webhook"), mounts)
    return override_flags(
        args,
        {
            "--bind-address": "127.0.0.1",
            "--port": str(https_port),
            "--metrics-bind-address": "127.0.0.1",
            "--metrics-port": str(metrics_port),
            "--shutdown-delay": "0",
            "--shutdown-timeout": "3",
            "--cert-check-interval": "0.1",
        },
    )


def reconciler_kubeconfig(fake: FakeApiServer, path: Path) -> Path:
    """A kubeconfig whose user is the reconciler's ServiceAccount (the fake does not authenticate)."""
    config = fake.kubeconfig(namespace=NAMESPACE)
    user = f"system:serviceaccount:{NAMESPACE}:{RECONCILER_SA}"
    config["users"] = [{"name": user, "user": {"token": "reconciler-service-account-token"}}]
    config["contexts"][0]["context"]["user"] = user
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@contextmanager
def running_cluster(workdir: Path) -> Iterator[Cluster]:
    """Bring a cluster up, yield it, and always take everything down again."""
    stack = ExitStack()
    try:
        rendered = render(release=RELEASE, namespace=NAMESPACE)
        fake = FakeApiServer()
        fake.start_in_thread()
        stack.callback(fake.stop_thread)
        api = user_client(fake)
        stack.callback(api.close)
        install(fake, rendered, api)

        ports = Ports(reconciler_metrics=free_port(), webhook_https=free_port(), webhook_metrics=free_port())
        route_webhook_service(fake, rendered, https_port=ports.webhook_https)

        webhook_deployment = rendered.deployment("webhook")
        mounts: dict[str, Path] = {}
        volumes: list[SecretVolume] = []
        for mount_path, secret_name in secret_mounts(webhook_deployment, "webhook").items():
            directory = workdir / "webhook-pod" / secret_name
            volume = SecretVolume(directory, functools.partial(fake.get, "v1", "secrets", secret_name, NAMESPACE))
            volume.start()
            stack.callback(volume.stop)
            mounts[mount_path] = directory
            volumes.append(volume)
        if [v.directory.name for v in volumes] != [TLS_SECRET]:
            raise HarnessError(f"expected the webhook to mount exactly Secret {TLS_SECRET}, got {list(mounts)}")

        reconciler = Process(
            "reconciler",
            reconciler_args(
                rendered,
                kubeconfig=reconciler_kubeconfig(fake, workdir / "reconciler.kubeconfig"),
                metrics_port=ports.reconciler_metrics,
            ),
            env=resolve_env(
                container(rendered.deployment("reconciler"), "reconciler"), pod_name=RECONCILER_POD, namespace=NAMESPACE
            ),
            log_dir=workdir,
        )
        webhook = Process(
            "webhook",
            webhook_args(rendered, mounts=mounts, https_port=ports.webhook_https, metrics_port=ports.webhook_metrics),
            env=resolve_env(container(webhook_deployment, "webhook"), pod_name=WEBHOOK_POD, namespace=NAMESPACE),
            log_dir=workdir,
        )
        stack.callback(reconciler.stop)
        stack.callback(webhook.stop)
        reconciler.start()
        webhook.start()
        cluster = Cluster(fake, rendered, workdir, ports, reconciler, webhook, volumes[0], api, stack)
        try:
            reconciler.wait_ready(f"http://127.0.0.1:{ports.reconciler_metrics}/readyz")
            webhook.wait_ready(f"http://127.0.0.1:{ports.webhook_metrics}/readyz")
            publish_ready_endpoint(api, rendered)
            wait_for(lambda: armed(fake, rendered), timeout=15.0, what="both webhook configurations armed")
        except (ProcessError, TimeoutError) as error:
            raise HarnessError(f"{error}\n{cluster.logs()}") from None
    except BaseException:
        stack.close()
        raise
    try:
        yield cluster
    finally:
        cluster.stop()
