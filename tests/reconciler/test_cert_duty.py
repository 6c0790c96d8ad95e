"""The webhook-certificate duty against the fake API server, with the chart's own webhook configurations.

Expected values come from issue 6 and docs/design/certificates.md §3, §4: a CA for 3650 days, a serving
certificate for 365 days for `<svc>.<ns>.svc` and `<svc>.<ns>.svc.cluster.local`, both backdated one hour;
renewal of the serving certificate 90 days and of the CA 365 days before expiry; the Secret layouts of the
chart (`<fullname>-webhook-tls`: tls.crt, tls.key, ca.crt; `<fullname>-webhook-ca`: ca.crt, ca.key).
Trust is checked with `ssl` itself: a client that trusts exactly the published caBundle must accept the
certificate being served, over a real handshake, and the fake API server's admission path (which verifies
webhooks against caBundle the way kube-apiserver does) must keep reaching a real webhook through a rotation.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import json
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from certs.authority import create_ca, issue_serving_cert
from certs.bundle import certificate_pem, fingerprint, is_issued_by, load_certificates, san_strings
from certs.injector import InjectionError, drifted_webhooks, inject_ca_bundle
from certs.secret import parse_ca_secret, parse_serving_secret
from reconciler.certduty.duty import CertDuty, CertDutyError
from reconciler.certduty.kinds import (
    ENDPOINT_SLICE,
    MUTATING_WEBHOOK_CONFIGURATION,
    SECRET,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from reconciler.certduty.metrics import CertDutyMetrics
from reconciler.certduty.settings import (
    CertDutySettings,
    add_cert_arguments,
    cert_settings_from_args,
)
from reconciler.certduty.wiring import PEER as CERTDUTY
from reconciler.modelbooster.kinds import MODEL_BOOSTER
from reconciler.peer import new_context
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.environment import SettingsError
from reconciler.runtime.kinds import LEASE
from reconciler.runtime.leader import LeaseTimings, micro_time
from reconciler.runtime.manager import Manager, ManagerOptions
from reconciler.runtime.metrics import Metrics
from reconciler.settings import ProcessSettings
from tests.chart.rbac import grants_for_service_account, is_allowed, request_from_http
from tests.chart.render import ENTRIES_ANNOTATION, Rendered, render, webhook_entries
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import booster, eventually, quiet
from webhook.main import WebhookServer
from webhook.settings import Settings as WebhookSettings

# The chart rendered for release "mb" in namespace "modelbooster-system" (tests/chart/render.py) names:
NAMESPACE = "modelbooster-system"
SERVICE = "mb-modelbooster-webhook"
TLS_SECRET = "mb-modelbooster-webhook-tls"
CA_SECRET = "mb-modelbooster-webhook-ca"
CONFIGURATION = "mb-modelbooster"
SERVER_NAME = "mb-modelbooster-webhook.modelbooster-system.svc"
SANS = {SERVER_NAME, "mb-modelbooster-webhook.modelbooster-system.svc.cluster.local"}
# No arm delay: the tests below start with a ready webhook endpoint and expect armed configurations at once;
# the arming tests set their own.
SETTINGS = CertDutySettings(
    service=SERVICE, namespace=NAMESPACE, tls_secret=TLS_SECRET, ca_secret=CA_SECRET, configuration=CONFIGURATION,
    arm_delay=0.0,
)  # fmt: skip
ENDPOINT_SLICE_NAME = f"{SERVICE}-x7k2p"
USER_AGENT = "modelbooster-reconciler (cert-duty)"
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
CONFIG_KINDS = (MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION)
LEASE_NAME = "mb-modelbooster-reconciler"


def _now() -> datetime:
    # Whole seconds: X.509 times have no fractions, so computed dates compare exactly.
    return datetime.now(UTC).replace(microsecond=0)


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


# --------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def chart() -> Rendered:
    return render({})


@pytest.fixture
async def api(fake: FakeApiServer, chart: Rendered) -> AsyncIterator[KubeClient]:
    """The fake with the webhook namespace and the chart's two webhook configurations; a client for what
    the test itself does (a user, Helm), told apart from the duty's requests by its User-Agent."""
    fake.create_namespace(NAMESPACE)
    for kind in CONFIG_KINDS:
        fake.create(copy.deepcopy(chart.one(kind.kind, CONFIGURATION)))
    fake.create(endpoint_slice(ready=True))
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="test-user")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def duty_client(api: KubeClient, fake: FakeApiServer) -> AsyncIterator[KubeClient]:
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent=USER_AGENT)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def clock() -> Clock:
    return Clock(_now())


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def duty(fake: FakeApiServer, duty_client: KubeClient, clock: Clock, registry: CollectorRegistry) -> CertDuty:
    return CertDuty(client=duty_client, settings=SETTINGS, metrics=CertDutyMetrics(registry), clock=clock,
                    endpoints=lambda: endpoint_slices(fake))  # fmt: skip


def endpoint_slice(*, ready: bool | None) -> dict[str, Any]:
    """What the EndpointSlice controller writes for the webhook Service with one pod (`ready` None: unset)."""
    conditions = {} if ready is None else {"ready": ready}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": ENDPOINT_SLICE_NAME, "namespace": NAMESPACE,
                     "labels": {"kubernetes.io/service-name": SERVICE}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.7"], "conditions": conditions}],
        "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}],
    }  # fmt: skip


def endpoint_slices(fake: FakeApiServer) -> list[dict[str, Any]]:
    found = fake.get("discovery.k8s.io/v1", "endpointslices", ENDPOINT_SLICE_NAME, NAMESPACE)
    return [copy.deepcopy(found)] if found is not None else []


# ---------------------------------------------------------------------------------------------------- helpers
def secret(fake: FakeApiServer, name: str) -> dict[str, Any] | None:
    """A private copy of the stored Secret (the fake hands out its own object)."""
    return copy.deepcopy(fake.get("v1", "secrets", name, NAMESPACE))


def data(fake: FakeApiServer, name: str) -> dict[str, bytes]:
    found = secret(fake, name)
    assert found is not None, f"Secret {name} does not exist"
    return {key: base64.b64decode(value) for key, value in found["data"].items()}


def configuration(fake: FakeApiServer, kind: Any) -> dict[str, Any]:
    found = copy.deepcopy(fake.get(kind.api_version, kind.plural, CONFIGURATION))
    assert found is not None
    return found


def ca_bundles(fake: FakeApiServer) -> list[str | None]:
    """The caBundle of every entry of both configurations (none while they are not armed)."""
    return [
        (webhook.get("clientConfig") or {}).get("caBundle")
        for kind in CONFIG_KINDS
        for webhook in configuration(fake, kind).get("webhooks") or []
    ]


def rendered_entries(chart: Rendered, kind: Any) -> list[dict[str, Any]]:
    return webhook_entries(chart.one(kind.kind, CONFIGURATION))


async def store_with_rendered_entries(api: KubeClient, fake: FakeApiServer, chart: Rendered) -> None:
    """Both configurations as a chart that renders the entries has them (cert-manager mode, or the chart before
    the reconciler armed them): entries without caBundle, no annotation."""
    for kind in CONFIG_KINDS:
        stored = configuration(fake, kind)
        stored["metadata"]["annotations"].pop(ENTRIES_ANNOTATION)
        stored["webhooks"] = rendered_entries(chart, kind)
        await api.replace(kind, stored)


def published_pem(fake: FakeApiServer) -> bytes:
    """The one caBundle all entries agree on, as PEM."""
    bundles = set(ca_bundles(fake))
    assert len(bundles) == 1, f"entries disagree: {bundles}"
    (bundle,) = bundles
    assert bundle, "no caBundle injected"
    return base64.b64decode(bundle)


def duty_writes(fake: FakeApiServer) -> list[tuple[str, str, str]]:
    """(verb, resource, name) of each write the duty's client made, in order."""
    return [(e.verb, e.resource, e.name) for e in fake.requests.writes() if e.user_agent == USER_AGENT]


def tls_handshake(*, trusted_pem: bytes, cert_pem: bytes, key_pem: bytes, tmp_path: Path) -> None:
    """A TLS handshake in memory: a client trusting exactly `trusted_pem` and checking the webhook's DNS name,
    against a server presenting `cert_pem`. Raises ssl.SSLCertVerificationError when the client refuses."""
    cert_file, key_file = tmp_path / "hs.crt", tmp_path / "hs.key"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_file, key_file)
    client_context = ssl.create_default_context(cadata=trusted_pem.decode())
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context.wrap_bio(to_client, to_server, server_hostname=SERVER_NAME)
    server = server_context.wrap_bio(to_server, to_client, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, side in (("client", client), ("server", server)):
            if done[name]:
                continue
            try:
                side.do_handshake()
                done[name] = True
            except ssl.SSLWantReadError:
                pass
        if all(done.values()):
            return
    raise AssertionError("handshake did not finish")


def serving_pair(fake: FakeApiServer) -> tuple[bytes, bytes]:
    stored = data(fake, TLS_SECRET)
    return stored["tls.crt"], stored["tls.key"]


# ------------------------------------------------------------------------------------------------ first pass
async def test_first_pass_creates_both_secrets_and_injects_every_entry(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, clock: Clock, chart: Rendered
) -> None:
    # Entries as rendered (no annotation: injection only), and a second entry in the validating configuration:
    # every entry must get the bundle, not just the first.
    await store_with_rendered_entries(api, fake, chart)
    validating = configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)
    extra = copy.deepcopy(validating["webhooks"][0])
    extra["name"] = "extra.modelboosters.workload.serving.volcano.sh"
    validating["webhooks"].append(extra)
    await api.replace(VALIDATING_WEBHOOK_CONFIGURATION, validating)
    fake.requests.clear()

    report = await duty.sync()

    assert report.issued_ca
    assert report.issued_serving
    tls = secret(fake, TLS_SECRET)
    ca_secret = secret(fake, CA_SECRET)
    assert tls is not None
    assert ca_secret is not None
    assert tls["type"] == "kubernetes.io/tls"
    assert set(tls["data"]) == {"tls.crt", "tls.key", "ca.crt"}  # never the CA key
    assert ca_secret["type"] == "Opaque"
    assert set(ca_secret["data"]) == {"ca.crt", "ca.key"}

    bundle = parse_serving_secret(tls)
    ca = parse_ca_secret(ca_secret)
    assert bundle.ca_crt == ca.cert_pem  # one CA so far, the one whose key is in the CA Secret
    assert san_strings(bundle.serving_cert) == SANS
    assert is_issued_by(bundle.serving_cert, ca.cert)
    assert ca.cert.not_valid_before_utc == clock.now - HOUR
    assert ca.cert.not_valid_after_utc == clock.now + 3650 * DAY
    assert bundle.serving_cert.not_valid_before_utc == clock.now - HOUR
    assert bundle.serving_cert.not_valid_after_utc == clock.now + 365 * DAY
    assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True

    # Three entries, all with the Secret's ca.crt.
    assert ca_bundles(fake) == [base64.b64encode(bundle.ca_crt).decode()] * 3
    # The rest of the chart's configuration is untouched.
    for kind in CONFIG_KINDS:
        stored = configuration(fake, kind)
        rendered = rendered_entries(chart, kind)
        assert stored["webhooks"][0]["clientConfig"]["service"] == rendered[0]["clientConfig"]["service"]
        assert stored["webhooks"][0]["rules"] == rendered[0]["rules"]

    # The bundle is trusted before the certificate signed by its CA exists anywhere.
    assert duty_writes(fake) == [
        ("update", "mutatingwebhookconfigurations", CONFIGURATION),
        ("update", "validatingwebhookconfigurations", CONFIGURATION),
        ("create", "secrets", ""),
        ("create", "secrets", ""),
    ]
    created = [e.body["metadata"]["name"] for e in fake.requests.matching(verb="create", resource="secrets")]
    assert created == [CA_SECRET, TLS_SECRET]
    assert report.secrets_written == (CA_SECRET, TLS_SECRET)


async def test_second_pass_writes_nothing(fake: FakeApiServer, duty: CertDuty) -> None:
    await duty.sync()
    fake.requests.clear()
    report = await duty.sync()
    assert duty_writes(fake) == []
    assert not report.wrote
    assert not report.issued_ca
    assert not report.issued_serving


async def test_missing_configurations_do_not_stop_the_secrets(fake: FakeApiServer, api: KubeClient,
                                                               duty: CertDuty) -> None:  # fmt: skip
    await api.delete(VALIDATING_WEBHOOK_CONFIGURATION, None, CONFIGURATION)
    report = await duty.sync()
    assert report.missing_configurations == ("ValidatingWebhookConfiguration",)
    assert secret(fake, TLS_SECRET) is not None
    assert [kind for kind, _ in report.injected] == ["MutatingWebhookConfiguration"]


async def test_a_client_trusting_the_published_bundle_accepts_the_served_certificate(
    fake: FakeApiServer, duty: CertDuty, tmp_path: Path
) -> None:
    await duty.sync()
    cert_pem, key_pem = serving_pair(fake)
    tls_handshake(trusted_pem=published_pem(fake), cert_pem=cert_pem, key_pem=key_pem, tmp_path=tmp_path)
    # The check has teeth: a bundle with another CA is refused.
    stranger = create_ca().cert_pem
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_handshake(trusted_pem=stranger, cert_pem=cert_pem, key_pem=key_pem, tmp_path=tmp_path)


# ----------------------------------------------------------------------------------------------- renewal
async def test_serving_certificate_is_renewed_90_days_before_expiry(
    fake: FakeApiServer, duty: CertDuty, clock: Clock, tmp_path: Path
) -> None:
    real_now = clock.now
    clock.now = real_now - 280 * DAY  # the first certificate expires at real_now + 85 days
    await duty.sync()
    old_cert, old_key = serving_pair(fake)
    old_ca = data(fake, CA_SECRET)
    bundle_before = published_pem(fake)

    clock.now = real_now - 280 * DAY + 274 * DAY  # 91 days left: nothing is due
    fake.requests.clear()
    assert not (await duty.sync()).wrote
    assert duty_writes(fake) == []

    clock.now = real_now - 280 * DAY + 276 * DAY  # 89 days left: renew
    fake.requests.clear()
    report = await duty.sync()
    assert report.issued_serving
    assert not report.issued_ca
    assert any("90 days" in reason for reason in report.reasons)
    # Same CA, so the bundle stays and only the serving Secret is written.
    assert duty_writes(fake) == [("update", "secrets", TLS_SECRET)]
    assert data(fake, CA_SECRET) == old_ca
    assert published_pem(fake) == bundle_before
    new_cert, new_key = serving_pair(fake)
    assert new_cert != old_cert
    renewed = load_certificates(new_cert, what="tls.crt")[0]
    assert renewed.not_valid_after_utc == clock.now + 365 * DAY
    # Webhook pods that still serve the old pair (the kubelet updates mounts late) and those that already
    # serve the new one are both trusted.
    for cert_pem, key_pem in ((old_cert, old_key), (new_cert, new_key)):
        tls_handshake(trusted_pem=published_pem(fake), cert_pem=cert_pem, key_pem=key_pem, tmp_path=tmp_path)


async def _rotate_ca(fake: FakeApiServer, duty: CertDuty, clock: Clock, real_now: datetime) -> None:
    """Bring the store to the moment of a CA rotation: the CA expires at real_now + 300 days and the serving
    certificate in use was issued 100 days ago (both valid at the real time, for real handshakes)."""
    clock.now = real_now - 3350 * DAY
    await duty.sync()
    clock.now = real_now - 100 * DAY  # the first serving certificate has expired; the CA has 400 days left
    report = await duty.sync()
    assert report.issued_serving
    assert not report.issued_ca


async def test_ca_rotation_publishes_old_and_new_ca_during_the_overlap(
    fake: FakeApiServer, duty: CertDuty, clock: Clock, tmp_path: Path
) -> None:
    real_now = clock.now
    await _rotate_ca(fake, duty, clock, real_now)
    old_ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    old_cert, old_key = serving_pair(fake)
    tls_handshake(trusted_pem=published_pem(fake), cert_pem=old_cert, key_pem=old_key, tmp_path=tmp_path)

    clock.now = real_now  # 300 days left on the CA: within the 365-day renewal window
    fake.requests.clear()
    report = await duty.sync()
    assert report.issued_ca
    assert report.issued_serving

    new_ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    assert fingerprint(new_ca.cert) != fingerprint(old_ca.cert)
    published = load_certificates(published_pem(fake), what="caBundle")
    assert {fingerprint(c) for c in published} == {fingerprint(new_ca.cert), fingerprint(old_ca.cert)}
    assert data(fake, TLS_SECRET)["ca.crt"] == published_pem(fake)
    new_cert, new_key = serving_pair(fake)
    assert is_issued_by(load_certificates(new_cert, what="tls.crt")[0], new_ca.cert)
    # Trust first: both configurations carry the new CA before either Secret changes.
    assert duty_writes(fake) == [
        ("update", "mutatingwebhookconfigurations", CONFIGURATION),
        ("update", "validatingwebhookconfigurations", CONFIGURATION),
        ("update", "secrets", CA_SECRET),
        ("update", "secrets", TLS_SECRET),
    ]
    for cert_pem, key_pem in ((old_cert, old_key), (new_cert, new_key)):
        tls_handshake(trusted_pem=published_pem(fake), cert_pem=cert_pem, key_pem=key_pem, tmp_path=tmp_path)

    # Once the old CA has expired it leaves the bundle (and the serving certificate, 64 days from its end,
    # is renewed on the way); the new CA's certificate is still trusted.
    clock.now = real_now + 301 * DAY
    fake.requests.clear()
    await duty.sync()
    published = load_certificates(published_pem(fake), what="caBundle")
    assert [fingerprint(c) for c in published] == [fingerprint(new_ca.cert)]
    assert ("update", "mutatingwebhookconfigurations", CONFIGURATION) in duty_writes(fake)


@dataclass
class MountedWebhook:
    """A real webhook serving the pair it finds in a directory that `kubelet_sync` fills from the serving
    Secret, so a test decides when the 'kubelet' projects a new Secret."""

    fake: FakeApiServer
    server: WebhookServer
    directory: Path

    def kubelet_sync(self) -> None:
        cert_pem, key_pem = serving_pair(self.fake)
        (self.directory / "tls.crt").write_bytes(cert_pem)
        (self.directory / "tls.key").write_bytes(key_pem)

    async def project_and_reload(self) -> None:
        self.kubelet_sync()
        served = load_certificates(serving_pair(self.fake)[0], what="tls.crt")[0].not_valid_after_utc
        await eventually(lambda: self.server.state.reloader.not_after == served, message="webhook reloads")


StartWebhook = Callable[[], Awaitable[MountedWebhook]]


@pytest.fixture
async def mounted_webhook(fake: FakeApiServer, tmp_path: Path) -> AsyncIterator[StartWebhook]:
    """Start (once the serving Secret exists) a webhook that the fake API server calls for admission."""
    started: list[WebhookServer] = []

    async def start() -> MountedWebhook:
        directory = tmp_path / "mounted"
        directory.mkdir()
        server = WebhookServer(
            WebhookSettings(
                bind_address="127.0.0.1", port=0, metrics_bind_address="127.0.0.1", metrics_port=0,
                tls_cert_file=directory / "tls.crt", tls_private_key_file=directory / "tls.key",
                cert_check_interval=0.02, shutdown_timeout=1.0,
            )
        )  # fmt: skip
        mounted = MountedWebhook(fake, server, directory)
        mounted.kubelet_sync()
        await server.start()
        started.append(server)
        fake.route_service(namespace=NAMESPACE, name=SERVICE, port=443, to=("127.0.0.1", server.https_port))
        return mounted

    yield start
    for server in started:
        await server.stop()


async def test_admission_keeps_working_through_a_ca_rotation(
    fake: FakeApiServer,
    api: KubeClient,
    duty: CertDuty,
    clock: Clock,
    mounted_webhook: StartWebhook,
) -> None:
    """The fake API server calls a real webhook over HTTPS, verifying it with the injected caBundle."""
    real_now = clock.now
    await _rotate_ca(fake, duty, clock, real_now)
    webhook = await mounted_webhook()
    calls = len(fake.admission_calls)
    await api.create(MODEL_BOOSTER, booster("before"))

    clock.now = real_now
    await duty.sync()  # new CA: bundle [new, old]; the Secret now holds a certificate of the new CA
    # The pods still serve the old certificate (their mount is not updated yet): still trusted.
    await api.create(MODEL_BOOSTER, booster("during"))

    await webhook.project_and_reload()
    await api.create(MODEL_BOOSTER, booster("after"))
    # All three went through both webhooks (mutating and validating).
    assert len(fake.admission_calls) - calls == 6

    # Teeth: with only the old CA in the configurations the new certificate is refused...
    old_only = load_certificates(published_pem(fake), what="caBundle")[-1]
    await _set_ca_bundle(api, fake, certificate_pem(old_only))
    with pytest.raises(ApiError, match="failed calling webhook"):
        await api.create(MODEL_BOOSTER, booster("refused"))
    # ...and the duty puts the right bundle back.
    await duty.sync()
    await api.create(MODEL_BOOSTER, booster("restored"))


async def _set_ca_bundle(api: KubeClient, fake: FakeApiServer, pem_or_text: bytes, *, raw: str | None = None) -> None:
    """Someone else writes the caBundle of every entry of both configurations."""
    value = raw if raw is not None else base64.b64encode(pem_or_text).decode()
    for kind in CONFIG_KINDS:
        edited = configuration(fake, kind)
        for webhook in edited["webhooks"]:
            webhook.setdefault("clientConfig", {})["caBundle"] = value
        await api.replace(kind, edited)


async def _delete_both_secrets(api: KubeClient) -> None:
    await api.delete(SECRET, NAMESPACE, CA_SECRET)
    await api.delete(SECRET, NAMESPACE, TLS_SECRET)


# ----------------------------------------------------------------------------- both Secrets deleted
async def test_deleting_both_secrets_keeps_trusting_the_old_ca(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, clock: Clock, tmp_path: Path
) -> None:
    """docs/chart.md's advice for certificate trouble: the pods keep serving the old certificate until the
    kubelet projects the new Secret, so a client trusting the published bundle must accept both."""
    await duty.sync()
    old_ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    old_cert, old_key = serving_pair(fake)
    await _delete_both_secrets(api)
    fake.requests.clear()

    report = await duty.sync()

    assert report.issued_ca
    assert report.issued_serving
    new_ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    assert fingerprint(new_ca.cert) != fingerprint(old_ca.cert)
    published = load_certificates(published_pem(fake), what="caBundle")
    assert published == [new_ca.cert, old_ca.cert]
    assert data(fake, TLS_SECRET)["ca.crt"] == published_pem(fake)
    new_cert, new_key = serving_pair(fake)
    assert is_issued_by(load_certificates(new_cert, what="tls.crt")[0], new_ca.cert)
    for cert_pem, key_pem in ((old_cert, old_key), (new_cert, new_key)):
        tls_handshake(trusted_pem=published_pem(fake), cert_pem=cert_pem, key_pem=key_pem, tmp_path=tmp_path)
    # Still trust first: the configurations are written before the Secrets are created.
    assert duty_writes(fake) == [
        ("update", "mutatingwebhookconfigurations", CONFIGURATION),
        ("update", "validatingwebhookconfigurations", CONFIGURATION),
        ("create", "secrets", ""),
        ("create", "secrets", ""),
    ]


async def test_deleting_both_secrets_keeps_admission_working(
    fake: FakeApiServer,
    api: KubeClient,
    duty: CertDuty,
    mounted_webhook: StartWebhook,
) -> None:
    await duty.sync()
    webhook = await mounted_webhook()
    await api.create(MODEL_BOOSTER, booster("before"))
    await _delete_both_secrets(api)
    await duty.sync()
    # The webhook still serves the old certificate: the API server, verifying with caBundle, still reaches it.
    await api.create(MODEL_BOOSTER, booster("during"))
    await webhook.project_and_reload()
    await api.create(MODEL_BOOSTER, booster("after"))


async def test_the_old_ca_leaves_a_day_after_the_new_serving_certificate(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, clock: Clock
) -> None:
    await duty.sync()
    await _delete_both_secrets(api)
    await duty.sync()
    new_ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    tls_before = data(fake, TLS_SECRET)

    clock.now += 22 * HOUR  # the new certificate's notBefore was an hour before the pass: 23 hours in
    fake.requests.clear()
    assert not (await duty.sync()).wrote
    assert duty_writes(fake) == []

    clock.now += HOUR  # 24 hours after its notBefore no pod can still serve the old certificate
    report = await duty.sync()
    assert not report.issued_ca
    assert not report.issued_serving
    assert any("replaced CA(s) dropped" in reason for reason in report.reasons)
    assert published_pem(fake) == new_ca.cert_pem
    assert data(fake, TLS_SECRET)["ca.crt"] == new_ca.cert_pem
    assert data(fake, TLS_SECRET)["tls.crt"] == tls_before["tls.crt"]
    assert duty_writes(fake) == [
        ("update", "mutatingwebhookconfigurations", CONFIGURATION),
        ("update", "validatingwebhookconfigurations", CONFIGURATION),
        ("update", "secrets", TLS_SECRET),
    ]


async def test_only_still_valid_cas_of_the_injected_bundle_are_kept(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, clock: Clock
) -> None:
    await duty.sync()
    current = parse_ca_secret(secret(fake, CA_SECRET) or {})
    expired = create_ca(now=clock.now - 3651 * DAY)
    leaf = issue_serving_cert(ca=current, service=SERVICE, namespace=NAMESPACE, now=clock.now)
    await _set_ca_bundle(api, fake, current.cert_pem + expired.cert_pem + leaf.cert_pem)
    await _delete_both_secrets(api)

    await duty.sync()

    new_ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    published = {fingerprint(c) for c in load_certificates(published_pem(fake), what="caBundle")}
    assert published == {fingerprint(new_ca.cert), fingerprint(current.cert)}


async def test_garbage_in_the_injected_bundle_is_logged_and_left_out(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, caplog: pytest.LogCaptureFixture
) -> None:
    await duty.sync()
    mutating = configuration(fake, MUTATING_WEBHOOK_CONFIGURATION)
    mutating["webhooks"][0]["clientConfig"]["caBundle"] = "not base64 at all!"
    await api.replace(MUTATING_WEBHOOK_CONFIGURATION, mutating)
    validating = configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)
    validating["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(b"hello").decode()
    await api.replace(VALIDATING_WEBHOOK_CONFIGURATION, validating)
    await _delete_both_secrets(api)

    with caplog.at_level(logging.WARNING, logger="reconciler.certduty.duty"):
        report = await duty.sync()

    assert report.issued_ca
    new_ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    assert published_pem(fake) == new_ca.cert_pem
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert any(f"MutatingWebhookConfiguration {CONFIGURATION} webhooks[0] caBundle is not valid base64" in w
               for w in warnings)  # fmt: skip
    assert any(f"ValidatingWebhookConfiguration {CONFIGURATION} webhooks[0] caBundle holds no PEM block" in w
               for w in warnings)  # fmt: skip


async def test_a_foreign_ca_in_the_configurations_is_drift_while_the_serving_secret_is_fine(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty
) -> None:
    await duty.sync()
    good = published_pem(fake)
    stranger = create_ca()
    await _set_ca_bundle(api, fake, good + stranger.cert_pem)
    await duty.sync()
    assert published_pem(fake) == good
    assert data(fake, TLS_SECRET)["ca.crt"] == good


async def test_a_foreign_ca_found_with_both_secrets_gone_is_trusted_for_the_overlap_only(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, clock: Clock
) -> None:
    """It cannot be told from our own lost CA (module docstring), so it is kept like one, and leaves with it."""
    await duty.sync()
    stranger = create_ca(now=clock.now, common_name="someone-else")
    await _set_ca_bundle(api, fake, published_pem(fake) + stranger.cert_pem)
    await _delete_both_secrets(api)
    await duty.sync()
    assert stranger.cert in load_certificates(published_pem(fake), what="caBundle")
    clock.now += DAY
    await duty.sync()
    assert published_pem(fake) == data(fake, CA_SECRET)["ca.crt"]


# ------------------------------------------------------------------------------------------------ repairs
def _corrupt_tls_without_ca(stored: dict[str, Any]) -> None:
    del stored["data"]["ca.crt"]


def _corrupt_tls_garbage(stored: dict[str, Any]) -> None:
    stored["data"]["tls.crt"] = base64.b64encode(b"hello, not a certificate").decode()


def _corrupt_tls_foreign_key(stored: dict[str, Any]) -> None:
    other = issue_serving_cert(ca=create_ca(), service=SERVICE, namespace=NAMESPACE)
    stored["data"]["tls.key"] = base64.b64encode(other.key_pem).decode()


def _corrupt_ca_without_key(stored: dict[str, Any]) -> None:
    del stored["data"]["ca.key"]


def _corrupt_ca_with_leaf(stored: dict[str, Any]) -> None:
    leaf = issue_serving_cert(ca=create_ca(), service=SERVICE, namespace=NAMESPACE)
    stored["data"] = {
        "ca.crt": base64.b64encode(leaf.cert_pem).decode(),
        "ca.key": base64.b64encode(leaf.key_pem).decode(),
    }


@pytest.mark.parametrize(
    ("name", "corrupt", "complaint"),
    [
        (TLS_SECRET, _corrupt_tls_without_ca, "has no 'ca.crt'"),
        (TLS_SECRET, _corrupt_tls_garbage, "tls.crt is not PEM-encoded"),
        (TLS_SECRET, _corrupt_tls_foreign_key, "tls.key does not belong to the certificate"),
        (CA_SECRET, _corrupt_ca_without_key, "has no 'ca.key'"),
        (CA_SECRET, _corrupt_ca_with_leaf, "not a CA certificate"),
    ],
)
async def test_an_unusable_secret_is_repaired_and_reported(
    *,
    fake: FakeApiServer,
    api: KubeClient,
    duty: CertDuty,
    clock: Clock,
    registry: CollectorRegistry,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    name: str,
    corrupt: Callable[[dict[str, Any]], None],
    complaint: str,
) -> None:
    await duty.sync()
    stored = secret(fake, name)
    assert stored is not None
    corrupt(stored)
    stored["data"]["unrelated"] = base64.b64encode(b"kept").decode()
    stored["metadata"].setdefault("labels", {})["team"] = "platform"
    await api.replace(SECRET, stored)

    with caplog.at_level(logging.WARNING, logger="reconciler.certduty.duty"):
        report = await duty.sync()

    assert [secret_name for secret_name, _ in report.repaired] == [name]
    assert complaint in report.repaired[0][1]
    assert any(name in record.getMessage() and complaint in record.getMessage() for record in caplog.records)
    assert registry.get_sample_value("modelbooster_certificate_secret_repairs_total", {"secret": name}) == 1
    # Usable again, consistent with the CA Secret and the configurations; other content of the Secret kept.
    bundle = parse_serving_secret(secret(fake, TLS_SECRET) or {})
    ca = parse_ca_secret(secret(fake, CA_SECRET) or {})
    assert bundle.problems(now=clock.now, sans=sorted(SANS)) == []
    assert is_issued_by(bundle.serving_cert, ca.cert)
    assert published_pem(fake) == bundle.ca_crt
    repaired = secret(fake, name) or {}
    assert base64.b64decode(repaired["data"]["unrelated"]) == b"kept"
    assert repaired["metadata"]["labels"]["team"] == "platform"
    tls_handshake(trusted_pem=published_pem(fake), cert_pem=bundle.tls_crt, key_pem=bundle.tls_key, tmp_path=tmp_path)
    # Repaired for good: the next pass finds nothing to do.
    fake.requests.clear()
    assert not (await duty.sync()).wrote


# -------------------------------------------------------------------------------------------- conflicts
async def test_a_conflicting_write_restarts_the_pass_from_fresh_reads(fake: FakeApiServer, duty: CertDuty) -> None:
    fake.faults.fail_next(1, status=409, verb="update", resource="mutatingwebhookconfigurations")
    fake.faults.fail_next(1, status=409, verb="create", resource="secrets", reason="AlreadyExists")
    report = await duty.sync()
    assert report.secrets_written == (CA_SECRET, TLS_SECRET)
    bundle = parse_serving_secret(secret(fake, TLS_SECRET) or {})
    assert published_pem(fake) == bundle.ca_crt
    assert is_issued_by(bundle.serving_cert, parse_ca_secret(secret(fake, CA_SECRET) or {}).cert)


async def test_a_secret_created_by_someone_else_in_between_is_adopted(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, clock: Clock
) -> None:
    """Another writer creates the CA Secret after our read: our create fails AlreadyExists, and the pass
    starts again from what is stored, signing with that CA instead of overwriting it."""
    theirs = create_ca(now=clock.now)
    original_get = duty.client.get
    raced = False

    async def racing_get(kind: Any, namespace: str | None, name: str) -> dict[str, Any]:
        nonlocal raced
        try:
            return await original_get(kind, namespace, name)
        except ApiError as error:
            if kind == SECRET and name == CA_SECRET and not raced:
                raced = True
                fake.create(
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": CA_SECRET, "namespace": NAMESPACE},
                        "type": "Opaque",
                        "data": {
                            "ca.crt": base64.b64encode(theirs.cert_pem).decode(),
                            "ca.key": base64.b64encode(theirs.key_pem).decode(),
                        },
                    }
                )
            raise error

    duty.client.get = racing_get  # type: ignore[method-assign]
    report = await duty.sync()
    assert raced
    assert report.secrets_written == (TLS_SECRET,)
    assert data(fake, CA_SECRET)["ca.key"] == theirs.key_pem
    bundle = parse_serving_secret(secret(fake, TLS_SECRET) or {})
    assert is_issued_by(bundle.serving_cert, theirs.cert)
    published = load_certificates(published_pem(fake), what="caBundle")
    assert published[0] == theirs.cert
    # The first attempt injected its own CA before its create failed. With no serving Secret the duty cannot
    # tell that no pod serves a certificate of that CA, so it stays trusted for the overlap, and no longer.
    assert len(published) == 2
    assert published_pem(fake) == bundle.ca_crt
    clock.now += DAY
    await duty.sync()
    assert published_pem(fake) == theirs.cert_pem


# ----------------------------------------------------------------------------------- the running duty
LEASE_TIMINGS = LeaseTimings(lease_duration=1.5, renew_deadline=1.0, retry_period=0.2)


class RunningDuty:
    """A reconciler manager with only the certificate duty registered, as reconciler/main.py will wire it."""

    def __init__(self, fake: FakeApiServer, settings: CertDutySettings, clock: Clock, *, leader_elect: bool) -> None:
        self.metrics = Metrics()
        self.client = KubeClient.for_configuration(fake.aio_configuration(), user_agent=USER_AGENT,
                                                   metrics=self.metrics)  # fmt: skip
        self.manager = Manager(
            self.client,
            options=ManagerOptions(
                leader_elect=leader_elect, lease_name=LEASE_NAME, lease_namespace=NAMESPACE, identity="cert-duty",
                lease=LEASE_TIMINGS, watch_timeout=30, shutdown_timeout=1.0, leader_task_backoff=0.05,
            ),
        metrics=self.metrics)  # fmt: skip
        context = new_context(self.manager, ProcessSettings(), version="test", clock=clock)
        self.duty = CERTDUTY.register(context, settings)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> RunningDuty:
        self._task = asyncio.create_task(self.manager.run(self._stop))
        await asyncio.wait_for(self.manager.wait_synced(), 10)
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._stop.set()
            await asyncio.wait_for(self._task, 10)
            self._task = None
        await self.client.close()

    def metric(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)


@pytest.fixture
async def start_duty(
    fake: FakeApiServer, api: KubeClient, clock: Clock
) -> AsyncIterator[Callable[..., Awaitable[RunningDuty]]]:
    started: list[RunningDuty] = []

    async def start(*, leader_elect: bool = False, **overrides: Any) -> RunningDuty:
        running = RunningDuty(fake, replace(SETTINGS, **overrides), clock, leader_elect=leader_elect)
        started.append(running)
        return await running.start()

    yield start
    for running in started:
        await running.stop()


def _injected(fake: FakeApiServer) -> bool:
    bundles = ca_bundles(fake)
    return len(bundles) == 2 and all(bundles) and secret(fake, TLS_SECRET) is not None


async def test_a_hand_edited_ca_bundle_is_restored(
    fake: FakeApiServer, api: KubeClient, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    # An hourly check would be too late for this test: the watch must bring the duty back.
    running = await start_duty(check_interval=3600)
    await eventually(lambda: _injected(fake), message="first injection")
    good = published_pem(fake)
    injections = running.metric("modelbooster_cabundle_injections_total", kind="MutatingWebhookConfiguration")

    edited = configuration(fake, MUTATING_WEBHOOK_CONFIGURATION)
    edited["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(create_ca().cert_pem).decode()
    await api.replace(MUTATING_WEBHOOK_CONFIGURATION, edited)
    await eventually(lambda: base64.b64decode(ca_bundles(fake)[0] or "") == good, message="mutating restored")

    # A `helm upgrade` re-applies the rendered configuration, which has no caBundle.
    wiped = configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)
    del wiped["webhooks"][0]["clientConfig"]["caBundle"]
    await api.replace(VALIDATING_WEBHOOK_CONFIGURATION, wiped)
    await eventually(lambda: base64.b64decode(ca_bundles(fake)[1] or "") == good, message="validating restored")

    assert running.metric("modelbooster_cabundle_injections_total", kind="MutatingWebhookConfiguration") == (
        (injections or 0) + 1
    )
    # The CA did not change for any of this.
    assert published_pem(fake) == good


async def test_our_own_writes_do_not_start_another_pass(
    fake: FakeApiServer, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    await start_duty(check_interval=3600)
    await eventually(lambda: _injected(fake), message="first injection")
    await quiet(0.3)
    # One pass reads each Secret once; the watch events of its four writes are recognised as its own.
    reads = [e.name for e in fake.requests.matching(verb="get", resource="secrets") if e.user_agent == USER_AGENT]
    assert sorted(reads) == [CA_SECRET, TLS_SECRET]


async def test_a_deleted_secret_is_recreated_with_the_same_ca(
    fake: FakeApiServer, api: KubeClient, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    await start_duty(check_interval=3600)
    await eventually(lambda: _injected(fake), message="first injection")
    ca_before = data(fake, CA_SECRET)
    await api.delete(SECRET, NAMESPACE, TLS_SECRET)
    await eventually(lambda: secret(fake, TLS_SECRET) is not None, message="serving Secret recreated")
    assert data(fake, CA_SECRET) == ca_before
    assert data(fake, TLS_SECRET)["ca.crt"] == ca_before["ca.crt"] == published_pem(fake)


async def test_a_configuration_created_later_gets_the_bundle(
    fake: FakeApiServer, api: KubeClient, chart: Rendered, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    await api.delete(VALIDATING_WEBHOOK_CONFIGURATION, None, CONFIGURATION)
    await start_duty(check_interval=3600)
    await eventually(lambda: secret(fake, TLS_SECRET) is not None, message="Secrets created")
    await api.create(VALIDATING_WEBHOOK_CONFIGURATION, copy.deepcopy(chart.one("ValidatingWebhookConfiguration",
                                                                               CONFIGURATION)))  # fmt: skip
    await eventually(lambda: _injected(fake), message="injected into the new configuration")
    assert published_pem(fake) == data(fake, TLS_SECRET)["ca.crt"]


async def test_the_periodic_check_renews_without_any_event(
    fake: FakeApiServer, clock: Clock, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    running = await start_duty(check_interval=0.1)
    await eventually(lambda: _injected(fake), message="first injection")
    first = data(fake, TLS_SECRET)["tls.crt"]
    await quiet(0.3)
    assert data(fake, TLS_SECRET)["tls.crt"] == first  # several checks, nothing due
    clock.now += 300 * DAY  # 65 days left: due, and only time says so
    await eventually(lambda: data(fake, TLS_SECRET)["tls.crt"] != first, message="renewed by the periodic check")
    # Counted once the pass has stored both Secrets: the first may be visible a moment before the count.
    await eventually(
        lambda: running.metric("modelbooster_certificates_issued_total", certificate="serving") == 2,
        message="the renewal counted once",
    )
    await quiet(0.3)
    assert running.metric("modelbooster_certificates_issued_total", certificate="serving") == 2


async def test_expiry_gauge_reports_both_secrets(
    fake: FakeApiServer, clock: Clock, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    running = await start_duty(check_interval=3600)
    gauge = "modelbooster_certificate_expiry_timestamp_seconds"
    await eventually(lambda: running.metric(gauge, secret=TLS_SECRET) is not None, message="gauge from cache")
    assert running.metric(gauge, secret=TLS_SECRET) == (clock.now + 365 * DAY).timestamp()
    await eventually(lambda: running.metric(gauge, secret=CA_SECRET) is not None, message="CA gauge")
    assert running.metric(gauge, secret=CA_SECRET) == (clock.now + 3650 * DAY).timestamp()


async def test_repair_counters_exist_from_the_start(duty: CertDuty, registry: CollectorRegistry) -> None:
    # A series at 0 before the first repair, so rate() and alerts see the repair when it comes.
    for name in (TLS_SECRET, CA_SECRET):
        assert registry.get_sample_value("modelbooster_certificate_secret_repairs_total", {"secret": name}) == 0


async def test_api_errors_are_retried_with_backoff(
    fake: FakeApiServer, duty_client: KubeClient, clock: Clock, registry: CollectorRegistry
) -> None:
    duty = CertDuty(
        client=duty_client,
        settings=SETTINGS,
        metrics=CertDutyMetrics(registry),
        clock=clock,
        retry_base=0.05,
        retry_max=0.1,
        endpoints=lambda: endpoint_slices(fake),
    )
    fake.faults.fail_next(3, status=500, verb="get", resource="secrets")
    task = asyncio.create_task(duty.run())
    try:
        await eventually(lambda: _injected(fake), message="converged after the errors")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert registry.get_sample_value("modelbooster_certificate_sync_errors_total") == 3


async def test_a_non_leader_does_nothing(
    fake: FakeApiServer, api: KubeClient, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    held = micro_time()
    fake.create(
        {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": {"name": LEASE_NAME, "namespace": NAMESPACE},
            "spec": {"holderIdentity": "other-replica", "leaseDurationSeconds": 3600, "acquireTime": held,
                     "renewTime": held, "leaseTransitions": 0},
        }
    )  # fmt: skip
    running = await start_duty(leader_elect=True, check_interval=0.1)
    await quiet(1.0)  # five election rounds and many check intervals
    assert not running.manager.is_leader
    assert [w for w in duty_writes(fake) if w[1] != "leases"] == []
    assert secret(fake, TLS_SECRET) is None
    assert secret(fake, CA_SECRET) is None
    assert ca_bundles(fake) == []  # not armed
    # The other replica steps down (releases the Lease): now this one leads and does the work.
    lease = copy.deepcopy(fake.get("coordination.k8s.io/v1", "leases", LEASE_NAME, NAMESPACE) or {})
    lease["spec"] = {"leaseDurationSeconds": 1, "renewTime": micro_time(), "acquireTime": micro_time()}
    await api.replace(LEASE, lease)
    await eventually(lambda: _injected(fake), within=10, message="the new leader injects")


async def test_duty_off_registers_nothing(fake: FakeApiServer) -> None:
    metrics = Metrics()
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent=USER_AGENT)
    try:
        manager = Manager(client, options=ManagerOptions(leader_elect=False), metrics=metrics)
        context = new_context(manager, ProcessSettings(), version="test")
        assert CERTDUTY.register(context, replace(SETTINGS, enabled=False)) is None
        assert manager.informers == [context.discovery.informer]
        assert manager._leader_tasks == []
        assert (
            metrics.registry.get_sample_value("modelbooster_certificates_issued_total", {"certificate": "ca"}) is None
        )
    finally:
        await client.close()


async def test_every_request_is_allowed_by_the_chart_rbac(
    fake: FakeApiServer, api: KubeClient, chart: Rendered, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    await start_duty(check_interval=3600)
    await eventually(lambda: _injected(fake), message="first injection")
    edited = configuration(fake, MUTATING_WEBHOOK_CONFIGURATION)
    del edited["webhooks"][0]["clientConfig"]["caBundle"]
    await api.replace(MUTATING_WEBHOOK_CONFIGURATION, edited)
    await eventually(lambda: _injected(fake), message="restored")
    await api.delete(SECRET, NAMESPACE, TLS_SECRET)
    await eventually(lambda: secret(fake, TLS_SECRET) is not None, message="recreated")

    grants = grants_for_service_account(chart.objects, service_account="mb-modelbooster-reconciler",
                                        namespace=NAMESPACE)  # fmt: skip
    requests = [e for e in fake.requests.entries() if e.user_agent == USER_AGENT and e.verb]
    assert requests
    denied = sorted(
        {
            f"{r.verb} {r.resource} {r.name or ''}".strip()
            for e in requests
            for r in [request_from_http(e.method, e.path, urlencode(e.query))]
            if not is_allowed(grants, r)
        }
    )
    assert denied == []


# ---------------------------------------------------------------------------------- injection (pure)
def _config(*webhooks: Any) -> dict[str, Any]:
    return {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "x", "resourceVersion": "7"},
            "webhooks": list(webhooks)}  # fmt: skip


def test_injection_sets_every_entry_and_keeps_the_rest() -> None:
    configuration = _config(
        {"name": "a.example.com", "clientConfig": {"service": {"name": "s"}, "caBundle": "b2xk"}},
        {"name": "b.example.com"},  # no clientConfig at all
        {"name": "c.example.com", "clientConfig": {"url": "https://x", "caBundle": "bmV3"}},
    )
    assert drifted_webhooks(configuration, "bmV3") == ["a.example.com", "b.example.com"]
    updated = inject_ca_bundle(configuration, "bmV3")
    assert updated is not None
    assert [w["clientConfig"] for w in updated["webhooks"]] == [
        {"service": {"name": "s"}, "caBundle": "bmV3"},
        {"caBundle": "bmV3"},
        {"url": "https://x", "caBundle": "bmV3"},
    ]
    assert updated["metadata"] == {"name": "x", "resourceVersion": "7"}  # the update stays conditional
    assert configuration["webhooks"][0]["clientConfig"]["caBundle"] == "b2xk"  # the input is not changed
    assert inject_ca_bundle(updated, "bmV3") is None
    assert inject_ca_bundle(_config(), "bmV3") is None  # no entries: nothing to write


@pytest.mark.parametrize(
    ("configuration", "message"),
    [
        ({"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"}, "webhooks": {}},
         "ValidatingWebhookConfiguration v: webhooks must be a list"),
        (_config("text"), "MutatingWebhookConfiguration x: webhooks[0] is not an object"),
        (_config({"name": "a.b.c", "clientConfig": []}), "webhooks[0].clientConfig is not an object"),
    ],
)  # fmt: skip
def test_injection_refuses_malformed_configurations(configuration: dict[str, Any], message: str) -> None:
    with pytest.raises(InjectionError) as error:
        inject_ca_bundle(configuration, "bmV3")
    assert message in str(error.value)


# ------------------------------------------------------------------------------------------------ settings
def _parse(argv: list[str], environ: dict[str, str] | None = None) -> CertDutySettings:
    parser = argparse.ArgumentParser()
    add_cert_arguments(parser, environ or {})
    return cert_settings_from_args(parser.parse_args(argv), environ or {"POD_NAMESPACE": "from-pod"})


def test_defaults_are_the_chart_names_for_a_release_called_modelbooster() -> None:
    settings = _parse([], {"POD_NAMESPACE": "kthena-system"})
    assert settings == CertDutySettings(
        enabled=True,
        service="modelbooster-webhook",
        namespace="kthena-system",
        tls_secret="modelbooster-webhook-tls",
        ca_secret="modelbooster-webhook-ca",
        configuration="modelbooster",
        check_interval=3600.0,
    )


def test_flags_and_environment() -> None:
    settings = _parse(
        ["--no-cert-duty", "--webhook-service", "svc", "--webhook-namespace", "ops", "--webhook-tls-secret", "t",
         "--webhook-ca-secret", "c", "--webhook-configuration", "cfg", "--cert-check-interval", "30m"],
    )  # fmt: skip
    assert settings == CertDutySettings(
        enabled=False, service="svc", namespace="ops", tls_secret="t", ca_secret="c", configuration="cfg",
        check_interval=1800.0,
    )  # fmt: skip
    environ = {
        "MODELBOOSTER_RECONCILER_CERT_DUTY": "false",
        "MODELBOOSTER_RECONCILER_WEBHOOK_NAMESPACE": "from-env",
        "MODELBOOSTER_RECONCILER_CERT_CHECK_INTERVAL": "90",
        "POD_NAMESPACE": "from-pod",
    }
    from_env = _parse([], environ)
    assert (from_env.enabled, from_env.namespace, from_env.check_interval) == (False, "from-env", 90.0)
    # A flag beats its variable.
    assert _parse(["--cert-duty", "--webhook-namespace", "flag"], environ).enabled is True
    assert _parse(["--webhook-namespace", "flag"], environ).namespace == "flag"


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (["--cert-check-interval", "0"], {}, "must be positive"),
        (["--cert-check-interval", "soon"], {}, "not a number of seconds nor a duration"),
        ([], {"MODELBOOSTER_RECONCILER_CERT_DUTY": "maybe"}, "MODELBOOSTER_RECONCILER_CERT_DUTY: must be true or"),
        ([], {"MODELBOOSTER_RECONCILER_CERT_CHECK_INTERVAL": "-5"}, "CERT_CHECK_INTERVAL: '-5': must be positive"),
    ],
)
def test_bad_flags_are_named(
    argv: list[str], environ: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse(argv, environ)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"service": "Webhook"}, "--webhook-service must be a DNS-1123 label"),
        ({"namespace": "a" * 64}, "--webhook-namespace must be a DNS-1123 label"),
        ({"tls_secret": "tls_secret"}, "--webhook-tls-secret must be a DNS-1123 subdomain"),
        ({"configuration": ""}, "--webhook-configuration must be a DNS-1123 subdomain"),
        ({"ca_secret": TLS_SECRET}, "must name different Secrets"),
        ({"check_interval": 0.0}, "--cert-check-interval must be positive"),
    ],
)
def test_bad_settings_are_named(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        replace(SETTINGS, **overrides)


# ------------------------------------------------------------------------------------ arming (webhook.md §7)
class Monotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def monotonic() -> Monotonic:
    return Monotonic()


@pytest.fixture
def slow_arming_duty(
    fake: FakeApiServer, duty_client: KubeClient, clock: Clock, registry: CollectorRegistry, monotonic: Monotonic
) -> CertDuty:
    """The duty with the default 2 s arm delay, on a clock of the test's."""
    return CertDuty(client=duty_client, settings=replace(SETTINGS, arm_delay=2.0), metrics=CertDutyMetrics(registry),
                    clock=clock, endpoints=lambda: endpoint_slices(fake), monotonic=monotonic)  # fmt: skip


async def set_endpoint(api: KubeClient, fake: FakeApiServer, *, ready: bool | None) -> None:
    stored = fake.get("discovery.k8s.io/v1", "endpointslices", ENDPOINT_SLICE_NAME, NAMESPACE)
    assert stored is not None
    updated = copy.deepcopy(stored)
    updated["endpoints"] = endpoint_slice(ready=ready)["endpoints"]
    await api.replace(ENDPOINT_SLICE, updated)


async def test_configurations_are_armed_only_after_an_endpoint_was_ready_for_the_delay(
    fake: FakeApiServer, api: KubeClient, slow_arming_duty: CertDuty, monotonic: Monotonic, chart: Rendered
) -> None:
    duty = slow_arming_duty
    await set_endpoint(api, fake, ready=False)  # the webhook pods wait for the Secret the duty writes

    report = await duty.sync()
    assert report.secrets_written == (CA_SECRET, TLS_SECRET)
    assert report.unarmed == ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    assert ca_bundles(fake) == []  # nothing enforced: no pod could answer

    await set_endpoint(api, fake, ready=True)
    assert (await duty.sync()).unarmed  # ready just now: kube-proxy may not route to it yet
    monotonic.now += 1.0
    assert (await duty.sync()).unarmed
    monotonic.now += 1.0
    report = await duty.sync()
    assert report.armed == ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    assert report.unarmed == ()
    bundle = base64.b64encode(data(fake, TLS_SECRET)["ca.crt"]).decode()
    assert ca_bundles(fake) == [bundle, bundle]
    for kind in CONFIG_KINDS:
        stored = configuration(fake, kind)["webhooks"]
        wanted = rendered_entries(chart, kind)
        assert [entry["name"] for entry in stored] == [entry["name"] for entry in wanted]
        assert stored[0]["rules"] == wanted[0]["rules"]
        assert stored[0]["failurePolicy"] == wanted[0]["failurePolicy"] == "Fail"
    assert (await duty.sync()).wrote is False  # armed and unchanged: nothing to write

    # Once armed, the entries stay when every webhook pod is gone: failing closed is what Fail asks for.
    await set_endpoint(api, fake, ready=False)
    monotonic.now += 60
    assert (await duty.sync()).wrote is False
    assert ca_bundles(fake) == [bundle, bundle]


async def test_an_endpoint_without_a_ready_condition_counts_as_ready(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty
) -> None:
    await set_endpoint(api, fake, ready=None)  # the API says an unset `ready` means ready
    assert (await duty.sync()).armed == ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


async def test_a_helm_upgrade_changing_the_entries_is_followed(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty
) -> None:
    await duty.sync()
    stored = configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)
    wanted = json.loads(stored["metadata"]["annotations"][ENTRIES_ANNOTATION])
    wanted[0]["timeoutSeconds"] = 9  # `helm upgrade --set webhook.timeoutSeconds=9` changes the annotation
    stored["metadata"]["annotations"][ENTRIES_ANNOTATION] = json.dumps(wanted)
    await api.replace(VALIDATING_WEBHOOK_CONFIGURATION, stored)
    fake.requests.clear()
    report = await duty.sync()
    assert duty_writes(fake) == [("update", "validatingwebhookconfigurations", CONFIGURATION)]
    assert report.armed == ()
    (entry,) = configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)["webhooks"]
    assert entry["timeoutSeconds"] == 9
    assert entry["clientConfig"]["caBundle"]


async def test_an_entry_edited_or_removed_by_hand_is_restored(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty, chart: Rendered
) -> None:
    await duty.sync()
    edited = configuration(fake, MUTATING_WEBHOOK_CONFIGURATION)
    edited["webhooks"][0]["failurePolicy"] = "Ignore"
    await api.replace(MUTATING_WEBHOOK_CONFIGURATION, edited)
    removed = configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)
    removed["webhooks"] = []
    await api.replace(VALIDATING_WEBHOOK_CONFIGURATION, removed)
    await duty.sync()
    assert configuration(fake, MUTATING_WEBHOOK_CONFIGURATION)["webhooks"][0]["failurePolicy"] == "Fail"
    assert len(configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)["webhooks"]) == 1


async def test_an_unreadable_annotation_stops_the_pass_with_its_name(
    fake: FakeApiServer, api: KubeClient, duty: CertDuty
) -> None:
    stored = configuration(fake, MUTATING_WEBHOOK_CONFIGURATION)
    stored["metadata"]["annotations"][ENTRIES_ANNOTATION] = "[{"
    await api.replace(MUTATING_WEBHOOK_CONFIGURATION, stored)
    with pytest.raises(CertDutyError, match=f"MutatingWebhookConfiguration {CONFIGURATION}: annotation "
                                            f"{ENTRIES_ANNOTATION} is not JSON"):  # fmt: skip
        await duty.sync()


async def test_a_pod_turning_ready_wakes_the_running_duty(
    fake: FakeApiServer, api: KubeClient, start_duty: Callable[..., Awaitable[RunningDuty]]
) -> None:
    await set_endpoint(api, fake, ready=False)
    await start_duty(check_interval=3600, arm_delay=0.3)
    await eventually(lambda: secret(fake, TLS_SECRET) is not None, message="Secrets written")
    await quiet(0.5)
    assert ca_bundles(fake) == []
    await set_endpoint(api, fake, ready=True)  # the EndpointSlice's watch event, then the delay, arm
    await eventually(lambda: _injected(fake), within=3.0, message="armed without any other event")


async def test_a_new_ready_spell_is_timed_from_its_start_even_while_armed(
    fake: FakeApiServer, api: KubeClient, slow_arming_duty: CertDuty, monotonic: Monotonic
) -> None:
    duty = slow_arming_duty
    await duty.sync()
    monotonic.now += 2.0
    assert (await duty.sync()).armed
    await set_endpoint(api, fake, ready=False)  # every webhook pod gone
    monotonic.now += 60
    await duty.sync()
    await set_endpoint(api, fake, ready=True)  # a pod ready again, just now
    await duty.sync()
    removed = configuration(fake, VALIDATING_WEBHOOK_CONFIGURATION)
    removed["webhooks"] = []  # someone removes the entries
    await api.replace(VALIDATING_WEBHOOK_CONFIGURATION, removed)
    monotonic.now += 1.0
    assert (await duty.sync()).unarmed == ("ValidatingWebhookConfiguration",)  # ready 1 s only
    monotonic.now += 1.0
    assert (await duty.sync()).armed == ("ValidatingWebhookConfiguration",)
