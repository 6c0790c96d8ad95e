"""A real Kubernetes control plane for tests: etcd + kube-apiserver (+ kube-controller-manager on request) from
`KUBEBUILDER_ASSETS`, on free loopback ports, with certificates made by our own `certs` package.

The binaries are the ones `KUBEBUILDER_ASSETS` names (CI sets it from the envtest kit kept beside the checkout).
Everything runs as child processes in their own sessions, logs in a temporary folder, and `ControlPlane.stop()`
takes it all down (SIGTERM, then SIGKILL) and removes the folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import BACKDATE, KeyPair, create_ca, generate_key, issue_serving_cert
from tests.e2e.processes import Process, ProcessError, free_port

if TYPE_CHECKING:
    import kubernetes.client

ASSETS_VARIABLE: Final = "KUBEBUILDER_ASSETS"
BINARIES: Final = ("etcd", "kube-apiserver", "kube-controller-manager")
ADMIN_USER: Final = "realapi-admin"
CONTROLLER_MANAGER_USER: Final = "system:kube-controller-manager"
READY_TIMEOUT: Final = 60.0  # ~2 s on an idle machine; the CI machine is shared by several jobs
CLIENT_VALIDITY: Final = timedelta(days=2)


class ControlPlaneError(Exception):
    """The control plane did not come up; the message names the step and carries the process log."""


def assets_folder() -> Path | None:
    """The folder named by KUBEBUILDER_ASSETS, or None when the variable is unset or empty."""
    value = os.environ.get(ASSETS_VARIABLE, "").strip()
    return Path(value) if value else None


def missing_binaries(folder: Path) -> list[str]:
    return [name for name in BINARIES if not os.access(folder / name, os.X_OK)]


def issue_client_cert(*, ca: KeyPair, user: str, groups: Sequence[str] = ()) -> KeyPair:
    """A TLS client certificate: kube-apiserver reads the user from CN and the groups from O."""
    now = datetime.now(UTC)
    key = generate_key()
    subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
    # X.509 caps a CN at 64 characters; a ServiceAccount's user name is often longer, and kube-apiserver (Go)
    # reads it all the same, so the cap is not enforced here.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Attribute's length must be", UserWarning)
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user, _validate=len(user) <= 64))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + CLIENT_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(cert=cert, key=key)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


@dataclass(frozen=True)
class Credentials:
    """A client identity on disk: certificate, key and a kubeconfig using them."""

    cert_file: Path
    key_file: Path
    kubeconfig: Path


def write_credentials(
    folder: Path, *, name: str, ca: KeyPair, ca_file: Path, host: str, groups: Sequence[str] = (), user: str = ""
) -> Credentials:
    pair = issue_client_cert(ca=ca, user=user or name, groups=groups)
    cert_file = _write(folder / f"{name}.crt", pair.cert_pem)
    key_file = _write(folder / f"{name}.key", pair.key_pem)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "realapi", "cluster": {"server": host, "certificate-authority": str(ca_file)}}],
        "users": [{"name": name, "user": {"client-certificate": str(cert_file), "client-key": str(key_file)}}],
        "contexts": [{"name": name, "context": {"cluster": "realapi", "user": name, "namespace": "default"}}],
        "current-context": name,
    }
    kubeconfig = folder / f"{name}.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
    return Credentials(cert_file=cert_file, key_file=key_file, kubeconfig=kubeconfig)


@dataclass
class RealCluster:
    """What tests get from the `real_api` fixture: an admin identity on a running kube-apiserver v1.36."""

    host: str  # https://127.0.0.1:<port>
    ca_file: Path
    cert_file: Path  # admin client certificate (organisation system:masters)
    key_file: Path
    kubeconfig: Path  # admin kubeconfig (kubectl, `config.load_kube_config`, our processes' --kubeconfig)
    workdir: Path  # logs and files of this control plane; removed at the end of the session
    ca: KeyPair = field(repr=False)  # signs more identities (`credentials`) and webhook serving certificates

    def configuration(self) -> kubernetes.client.Configuration:
        """A `kubernetes.client.Configuration` for the admin."""
        from kubernetes import client

        config = client.Configuration(host=self.host)
        config.ssl_ca_cert = str(self.ca_file)
        config.cert_file = str(self.cert_file)
        config.key_file = str(self.key_file)
        return config

    def api_client(self) -> kubernetes.client.ApiClient:
        """A sync `ApiClient` for the admin; the caller closes it."""
        from kubernetes import client

        return client.ApiClient(self.configuration())

    def credentials(self, name: str, *, user: str = "", groups: Sequence[str] = ()) -> Credentials:
        """Another client identity signed by the cluster CA (RBAC applies to it unless it is in system:masters)."""
        folder = self.workdir / "identities"
        folder.mkdir(exist_ok=True)
        return write_credentials(
            folder, name=name, ca=self.ca, ca_file=self.ca_file, host=self.host, groups=groups, user=user
        )

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context

    def get_raw(self, path: str, *, timeout: float = 2.0) -> tuple[int, str]:
        """(status, body) of a GET as the admin; status 0 when nothing answers."""
        try:
            with urllib.request.urlopen(self.host + path, timeout=timeout, context=self.ssl_context()) as answer:
                return int(answer.status), answer.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
            return 0, ""


class ControlPlane:
    """etcd + kube-apiserver started by `start()`, kube-controller-manager by `start_controller_manager()`."""

    def __init__(self, assets: Path) -> None:
        self.assets = assets
        self.workdir = Path(tempfile.mkdtemp(prefix="modelbooster-realapi-"))
        self.processes: list[Process] = []
        self.cluster: RealCluster | None = None
        self._sa_key: Path | None = None
        self._ca_key_file: Path | None = None

    # ---- start ----------------------------------------------------------------------------------------

    def _run(self, name: str, args: list[str]) -> Process:
        process = Process(name, args, env={}, log_dir=self.workdir, program=[str(self.assets / name)])
        self.processes.append(process)
        process.start()
        return process

    def _wait_ready(self, process: Process, check: Any, *, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while not check():
            if not process.running():
                raise ControlPlaneError(
                    f"{process.name} exited with {process.returncode()} before {what}:\n{process.log_tail(30)}"
                )
            if time.monotonic() >= deadline:
                raise ControlPlaneError(f"{what}: not after {READY_TIMEOUT}s:\n{process.log_tail(30)}")
            time.sleep(0.1)

    def start(self) -> RealCluster:
        missing = missing_binaries(self.assets)
        if missing:
            raise ControlPlaneError(f"{ASSETS_VARIABLE}={self.assets} lacks {', '.join(missing)}")
        pki = self.workdir / "pki"
        pki.mkdir()
        ca = create_ca(common_name="modelbooster-realapi-ca")
        ca_file = _write(pki / "ca.crt", ca.cert_pem)
        self._ca_key_file = _write(pki / "ca.key", ca.key_pem)
        serving = issue_serving_cert(
            ca=ca, service="kubernetes", namespace="default", extra_sans=["127.0.0.1", "localhost"]
        )
        serving_cert = _write(pki / "apiserver.crt", serving.cert_pem)
        serving_key = _write(pki / "apiserver.key", serving.key_pem)
        sa = generate_key()
        self._sa_key = _write(
            pki / "sa.key",
            sa.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
        sa_pub = _write(
            pki / "sa.pub",
            sa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        )

        client_port, peer_port, secure_port = free_port(), free_port(), free_port()
        etcd_client = f"http://127.0.0.1:{client_port}"
        etcd_peer = f"http://127.0.0.1:{peer_port}"
        etcd = self._run(
            "etcd",
            [
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={etcd_client}",
                f"--advertise-client-urls={etcd_client}",
                f"--listen-peer-urls={etcd_peer}",
                f"--initial-advertise-peer-urls={etcd_peer}",
                f"--initial-cluster=default={etcd_peer}",
                "--unsafe-no-fsync",
            ],
        )
        host = f"https://127.0.0.1:{secure_port}"
        apiserver = self._run(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_client}",
                f"--secure-port={secure_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--tls-cert-file={serving_cert}",
                f"--tls-private-key-file={serving_key}",
                f"--client-ca-file={ca_file}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={sa_pub}",
                f"--service-account-signing-key-file={self._sa_key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
            ],
        )
        admin = write_credentials(
            pki, name="admin", ca=ca, ca_file=ca_file, host=host, groups=["system:masters"], user=ADMIN_USER
        )
        cluster = RealCluster(
            host=host,
            ca_file=ca_file,
            cert_file=admin.cert_file,
            key_file=admin.key_file,
            kubeconfig=admin.kubeconfig,
            workdir=self.workdir,
            ca=ca,
        )
        self._wait_ready(etcd, etcd.running, what="etcd started")  # apiserver retries etcd itself
        self._wait_ready(
            apiserver,
            lambda: cluster.get_raw("/readyz", timeout=1.0) == (200, "ok"),
            what=f"kube-apiserver {host}/readyz",
        )
        self.cluster = cluster
        return cluster

    def start_controller_manager(self) -> None:
        """kube-controller-manager (garbage collector, namespace deletion, ...) bound to cluster-admin."""
        cluster = self.cluster
        if cluster is None or self._sa_key is None or self._ca_key_file is None:
            raise ControlPlaneError("start the API server first")
        from kubernetes import client

        with cluster.api_client() as api:
            binding = client.V1ClusterRoleBinding(
                metadata=client.V1ObjectMeta(name="realapi-kube-controller-manager"),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="cluster-admin"
                ),
                subjects=[
                    client.RbacV1Subject(
                        api_group="rbac.authorization.k8s.io", kind="User", name=CONTROLLER_MANAGER_USER
                    )
                ],
            )
            client.RbacAuthorizationV1Api(api).create_cluster_role_binding(binding)
        identity = cluster.credentials("kube-controller-manager", user=CONTROLLER_MANAGER_USER)
        port = free_port()
        manager = self._run(
            "kube-controller-manager",
            [
                f"--kubeconfig={identity.kubeconfig}",
                f"--authentication-kubeconfig={identity.kubeconfig}",
                f"--authorization-kubeconfig={identity.kubeconfig}",
                # Not the root CA publisher: a kube-root-ca.crt ConfigMap appearing in every namespace would change
                # what tests list there depending on whether a test before them needed this process.
                "--controllers=*,-service-ca-certificate-publisher-controller,-root-ca-certificate-publisher-controller",
                "--use-service-account-credentials=false",
                f"--service-account-private-key-file={self._sa_key}",
                f"--root-ca-file={cluster.ca_file}",
                f"--cluster-signing-cert-file={cluster.ca_file}",
                f"--cluster-signing-key-file={self._ca_key_file}",
                "--leader-elect=false",
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
            ],
        )
        context = ssl.create_default_context()
        context.check_hostname = False  # it serves a self-signed certificate of its own
        context.verify_mode = ssl.CERT_NONE

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=1.0, context=context) as r:
                    return bool(r.status == 200)
            except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
                return False

        self._wait_ready(manager, healthy, what="kube-controller-manager /healthz")

    # ---- stop -----------------------------------------------------------------------------------------

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.log_tail(30)}" for p in self.processes)

    def stop(self) -> None:
        """Stop every process, newest first, and remove the folder."""
        try:
            for process in reversed(self.processes):
                with contextlib.suppress(ProcessError):
                    process.stop(timeout=5.0)
            self.processes.clear()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)
