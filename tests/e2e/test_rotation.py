"""Certificate rotation with admission under load: no ModelBooster write may fail while it happens.

A user forces a rotation the way docs/chart.md says (deleting a Secret the reconciler owns). The reconciler's
leader issues what is missing, publishes the CA bundle into both webhook configurations before the new
serving certificate reaches a Secret; the kubelet step projects the Secret; the webhook hot-reloads it. Two
threads keep sending dry-run creates (each one a fresh TLS handshake from the API server to the webhook,
verified against the caBundle of that moment) the whole time.
"""

from __future__ import annotations

import base64
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from kubernetes.client import ApiException

from tests.chart.render import NAMESPACE
from tests.e2e.harness import CA_SECRET, FULLNAME, TLS_SECRET, Cluster, wait_for
from tests.e2e.user import core, create_booster, load_example

SERVICE_HOST = f"{FULLNAME}-webhook.{NAMESPACE}.svc"
RELOADS = re.compile(r'^modelbooster_webhook_certificate_reloads_total\{result="loaded"\} (\S+)$', re.M)


@dataclass
class AdmissionLoad:
    """Dry-run creates of a valid and an invalid ModelBooster, in a loop, from several threads."""

    cluster: Cluster
    admitted: int = 0
    denied: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _one(self, valid: dict[str, Any], invalid: dict[str, Any]) -> None:
        try:
            create_booster(self.cluster, valid, dry_run="All")
            with self._lock:
                self.admitted += 1
        except ApiException as error:
            with self._lock:
                self.failures.append(f"valid create refused: {error.status} {error.body}")
        try:
            create_booster(self.cluster, invalid, dry_run="All")
            with self._lock:
                self.failures.append("invalid create admitted")
        except ApiException as error:
            # Only the validating webhook's own answer counts: a failed call is a 500 "failed calling webhook".
            if error.status == 422 and "denied the request" in (error.body or ""):
                with self._lock:
                    self.denied += 1
            else:
                with self._lock:
                    self.failures.append(f"invalid create: {error.status} {error.body}")

    def _run(self, index: int) -> None:
        valid = load_example("single-vllm-cpu.yaml")
        valid["metadata"].update(name=f"rotation-{index}", namespace="e2e")
        invalid = load_example("invalid/mindie-backend.yaml")
        invalid["metadata"].update(name=f"rotation-bad-{index}", namespace="e2e")
        while not self._stop.is_set():
            self._one(valid, invalid)

    @contextmanager
    def running(self, threads: int = 2) -> Iterator[AdmissionLoad]:
        workers = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]
        for worker in workers:
            worker.start()
        try:
            yield self
        finally:
            self._stop.set()
            for worker in workers:
                worker.join(10)

    def wait_for_more(self, count: int) -> None:
        start = self.admitted
        wait_for(lambda: self.admitted >= start + count or self.failures, what=f"{count} more admissions")


def _secret_pem(cluster: Cluster, name: str, key: str) -> bytes | None:
    secret = cluster.get("v1", "secrets", name, NAMESPACE)
    if secret is None or key not in (secret.get("data") or {}):
        return None
    return base64.b64decode(secret["data"][key])


def _new_secret_pem(cluster: Cluster, name: str, key: str, *, other_than: bytes | None, what: str) -> bytes:
    def changed() -> bytes | None:
        pem = _secret_pem(cluster, name, key)
        return pem if pem is not None and pem != other_than else None

    return wait_for(changed, what=what)


def _ca_bundles(cluster: Cluster) -> list[bytes]:
    bundles = []
    for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        configuration = cluster.get("admissionregistration.k8s.io/v1", plural, FULLNAME)
        assert configuration is not None
        bundles += [base64.b64decode(w["clientConfig"]["caBundle"]) for w in configuration["webhooks"]]
    return bundles


def _served_certificate(cluster: Cluster, bundle: bytes) -> x509.Certificate:
    """The certificate the webhook presents in a new handshake, verified like the API server verifies it."""
    context = ssl.create_default_context(cadata=bundle.decode())
    with (
        socket.create_connection(("127.0.0.1", cluster.ports.webhook_https), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=SERVICE_HOST) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def _reloads(cluster: Cluster) -> float:
    found = RELOADS.search(cluster.scrape("webhook"))
    assert found is not None, "modelbooster_webhook_certificate_reloads_total{result=loaded} not exported"
    return float(found.group(1))


def _delete_secret(cluster: Cluster, name: str) -> None:
    core(cluster).delete_namespaced_secret(name, NAMESPACE)


def _serves(cluster: Cluster, pem: bytes, *, trusting: bytes) -> bool:
    return _served_certificate(cluster, trusting) == x509.load_pem_x509_certificate(pem)


def test_ca_rotation_keeps_admitting(cluster: Cluster) -> None:
    old_ca = _secret_pem(cluster, CA_SECRET, "ca.crt")
    old_serving = _secret_pem(cluster, TLS_SECRET, "tls.crt")
    assert old_ca is not None
    assert old_serving is not None
    reloads = _reloads(cluster)

    with AdmissionLoad(cluster).running() as load:
        load.wait_for_more(3)
        with cluster.tls_volume.held():
            _delete_secret(cluster, CA_SECRET)  # the reconciler must issue a new CA and keep trusting the old
            new_ca = _new_secret_pem(cluster, CA_SECRET, "ca.crt", other_than=old_ca, what="a new CA")
            new_serving = _new_secret_pem(
                cluster, TLS_SECRET, "tls.crt", other_than=old_serving, what="a serving certificate from the new CA"
            )
            both = {x509.load_pem_x509_certificate(old_ca), x509.load_pem_x509_certificate(new_ca)}
            for bundle in _ca_bundles(cluster):  # (CAs replaced earlier stay too, for a day)
                assert both <= set(x509.load_pem_x509_certificates(bundle))
            # The kubelet has not projected the new Secret yet: the webhook still serves the old certificate,
            # which the published bundle must still verify.
            assert _serves(cluster, old_serving, trusting=_ca_bundles(cluster)[0])
            load.wait_for_more(8)
        wait_for(
            lambda: _serves(cluster, new_serving, trusting=_ca_bundles(cluster)[0]),
            what="the webhook to serve the new certificate",
        )
        load.wait_for_more(5)

    assert load.failures == []
    assert load.denied > 0
    assert _reloads(cluster) > reloads
    assert _serves(cluster, new_serving, trusting=new_ca)  # the new CA alone verifies what is served now


def test_serving_certificate_reissue_keeps_admitting(cluster: Cluster) -> None:
    ca = _secret_pem(cluster, CA_SECRET, "ca.crt")
    old_serving = _secret_pem(cluster, TLS_SECRET, "tls.crt")
    assert ca is not None
    assert old_serving is not None

    with AdmissionLoad(cluster).running() as load:
        load.wait_for_more(3)
        with cluster.tls_volume.held():
            _delete_secret(cluster, TLS_SECRET)
            new_serving = _new_secret_pem(
                cluster, TLS_SECRET, "tls.crt", other_than=old_serving, what="a new serving certificate"
            )
            assert _serves(cluster, old_serving, trusting=_ca_bundles(cluster)[0])
            load.wait_for_more(8)
        wait_for(lambda: _serves(cluster, new_serving, trusting=ca), what="the webhook to serve the new certificate")
        load.wait_for_more(5)

    assert load.failures == []
    assert _secret_pem(cluster, CA_SECRET, "ca.crt") == ca  # the CA was not replaced
    for bundle in _ca_bundles(cluster):
        assert x509.load_pem_x509_certificate(ca) in x509.load_pem_x509_certificates(bundle)


def test_replacing_both_secrets_keeps_admitting(cluster: Cluster) -> None:
    """docs/chart.md's advice for certificate trouble: the reconciler issues a new CA and keeps trusting the CAs
    the configurations carried (the webhook still serves the old certificate), so nothing fails meanwhile."""
    old_ca = _secret_pem(cluster, CA_SECRET, "ca.crt")
    old_serving = _secret_pem(cluster, TLS_SECRET, "tls.crt")
    assert old_ca is not None
    assert old_serving is not None
    with AdmissionLoad(cluster).running() as load:
        load.wait_for_more(3)
        with cluster.tls_volume.held():
            _delete_secret(cluster, CA_SECRET)
            _delete_secret(cluster, TLS_SECRET)
            new_ca = _new_secret_pem(cluster, CA_SECRET, "ca.crt", other_than=old_ca, what="a new CA")
            new_serving = _new_secret_pem(
                cluster, TLS_SECRET, "tls.crt", other_than=old_serving, what="a new serving certificate"
            )
            both = {x509.load_pem_x509_certificate(old_ca), x509.load_pem_x509_certificate(new_ca)}
            for bundle in _ca_bundles(cluster):
                assert both <= set(x509.load_pem_x509_certificates(bundle))
            assert _serves(cluster, old_serving, trusting=_ca_bundles(cluster)[0])
            load.wait_for_more(8)
        wait_for(
            lambda: _serves(cluster, new_serving, trusting=_ca_bundles(cluster)[0]),
            what="the webhook to serve the new certificate",
        )
        load.wait_for_more(5)
    assert load.failures == []
    assert _serves(cluster, new_serving, trusting=new_ca)
