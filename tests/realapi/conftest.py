"""Fixtures for tests against a real kube-apiserver v1.36 (etcd + kube-apiserver from `KUBEBUILDER_ASSETS`).

    export KUBEBUILDER_ASSETS="$(../shared/envtest/setup)"   # `.ci/run` does this when ../shared/envtest exists

- `real_api` (session): starts etcd + kube-apiserver once per session (~2 s) on free loopback ports with a CA,
  serving and admin (`system:masters`) certificates made by our `certs` package; yields a `RealCluster`
  (`.kubeconfig`, `.host`, `.ca_file`, `.cert_file`, `.key_file`, `.api_client()`, `.configuration()`,
  `.credentials(name, groups=...)` for more identities, `.ca` to sign webhook serving certificates).
  Without `KUBEBUILDER_ASSETS` every test using it is **skipped with the reason**; with it set, a control plane
  that does not start skips the tests on a developer's machine and **fails** them under CI (`CI` set).
- `real_api_gc` (session): the same cluster with kube-controller-manager running too (garbage collector,
  namespace deletion); started only when a test asks for it.
- `real_client` (function): an admin `kubernetes.client.ApiClient`, closed afterwards; `real_user`: the same as a
  `tests.e2e.user.Session`, so the user helpers of tests/e2e/user.py work on the real cluster.
- `real_namespace` (function): a fresh namespace with a unique name, deleted afterwards (best effort; without
  kube-controller-manager it stays Terminating, which nothing else sees).
- `real_crds` (session): the chart's CRDs (ModelBooster, Inferno, child CRDs) applied and Established.
  Other CRD sets for a while (another Kthena generation's children, an outdated CRD, a kind gone):
  `with tests.realapi.crds.crds_replaced(api, documents, removed=[names]): ...` restores the chart's afterwards;
  `apply_crds` / `delete_crds` for the rest.
- `real_webhook_server` (session): our webhook process (the chart's arguments) serving on loopback with a
  certificate of the cluster CA; not registered by itself.
- `real_webhook` (function): that webhook registered for `real_namespace` only, with the chart's webhook
  configurations by URL (`caBundle` = the cluster CA), effective when the test starts, removed afterwards.
  Namespaces without it see only the CRD's schema and CEL rules. See `webhook.py`.
- Our reconciler process against the cluster (the chart's arguments, one namespace):
  `with tests.realapi.reconciler.running_reconciler(real_api, namespace=..., workdir=tmp_path) as r: ...`
  (it creates the chart's settings ConfigMap there first); `leader_elect=True` for several replicas.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.realapi.controlplane import ASSETS_VARIABLE, ControlPlane, ControlPlaneError, RealCluster, assets_folder
from tests.realapi.crds import apply_crds, chart_crds
from tests.realapi.differential import SUITE_SIZE
from tests.realapi.session import RealSession
from tests.realapi.webhook import Registration, WebhookServer, register_webhook, start_webhook


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The differential suite's size: scenarios x facets compared, and the allow-listed differences seen."""
    size = config.stash.get(SUITE_SIZE, {})
    if size:
        checks = sum(c for c, _ in size.values())
        allowed = sum(a for _, a in size.values())
        terminalreporter.write_line(
            f"differential suite: {len(size)} scenarios, {checks} checks, {allowed} allow-listed differences"
        )


SKIP_REASON = (
    f"{ASSETS_VARIABLE} is not set: real kube-apiserver tests need it "
    '(export KUBEBUILDER_ASSETS="$(../shared/envtest/setup)")'
)


@pytest.fixture(scope="session")
def _real_control_plane() -> Iterator[ControlPlane]:
    assets = assets_folder()
    if assets is None:
        pytest.skip(SKIP_REASON)
    plane = ControlPlane(assets)
    try:
        plane.start()
    except (ControlPlaneError, OSError) as error:
        logs = plane.logs()
        plane.stop()
        message = f"the real control plane from {ASSETS_VARIABLE}={assets} did not start: {error}\n{logs}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def real_api(_real_control_plane: ControlPlane) -> RealCluster:
    assert _real_control_plane.cluster is not None
    return _real_control_plane.cluster


@pytest.fixture(scope="session")
def real_api_gc(_real_control_plane: ControlPlane, real_api: RealCluster) -> RealCluster:
    try:
        _real_control_plane.start_controller_manager()
    except ControlPlaneError as error:
        pytest.fail(f"kube-controller-manager did not start: {error}")
    return real_api


@pytest.fixture
def real_client(real_api: RealCluster) -> Iterator[Any]:
    api = real_api.api_client()
    try:
        yield api
    finally:
        api.close()  # type: ignore[no-untyped-call]  # the client's close() is not annotated


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def real_user(real_client: Any) -> RealSession:
    """The admin's client as a `tests.e2e.user.Session`; append the processes a test starts to `.processes`."""
    return RealSession(user=real_client)


@pytest.fixture
def real_namespace(real_api: RealCluster) -> Iterator[str]:
    from kubernetes import client

    name = unique_name("rt")
    with real_api.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        try:
            yield name
        finally:
            with contextlib.suppress(client.ApiException):  # best effort: a test may have deleted it already
                core.delete_namespace(name)


@pytest.fixture(scope="session")
def real_crds(real_api: RealCluster) -> list[dict[str, Any]]:
    """The chart's CRDs as the API server stored them."""
    with real_api.api_client() as api:
        return apply_crds(api, chart_crds())


@pytest.fixture(scope="session")
def real_webhook_server(real_api: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    """Our webhook process, serving a certificate of the cluster CA on loopback (not registered by itself)."""
    with start_webhook(real_api, tmp_path_factory.mktemp("realapi-webhook")) as server:
        yield server


@pytest.fixture
def real_webhook(
    real_api: RealCluster, real_crds: list[dict[str, Any]], real_webhook_server: WebhookServer, real_namespace: str
) -> Iterator[Registration]:
    """The chart's webhook configurations registered by URL for `real_namespace`, called by the API server from
    the start of the test, removed afterwards."""
    with real_api.api_client() as api:
        registration = register_webhook(api, real_webhook_server, namespace=real_namespace)
        try:
            yield registration
        finally:
            registration.remove(api)
