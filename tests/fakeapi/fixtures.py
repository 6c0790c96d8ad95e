"""pytest fixtures for the fake API server (load with `pytest_plugins = ["tests.fakeapi.fixtures"]`).

- `fake_apiserver`: a `FakeApiServer` on a free loopback port, served from a background thread, so the
  blocking `kubernetes` client, `kubernetes.aio` and other threads can all use it. Handles:
  `.url`, `.faults`, `.requests` (log with per-verb counts), `.register_crd(...)`, `.create(...)`,
  `.create_namespace(...)`, `.settle()`, `.expire_history()`, `.close_watches()`, `.stall_watches()`,
  `.route_service(...)`, `.write_kubeconfig(...)`.
- `fake_apiserver_config`: override to change the `ServerConfig` of `fake_apiserver`.
- `fake_apiserver_inloop`: the same server run on the test's own event loop (async tests only; helpers
  that wait, like `settle`, are `await server.asettle()` there).
- `kube_config` / `kube_client`: `kubernetes.client.Configuration` and a closed-after-use `ApiClient`.
- `aio_kube_config` / `aio_kube_client`: the `kubernetes.aio` equivalents.
- `kubeconfig_file`: a kubeconfig file for the server (for kubectl or `config.load_kube_config`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.fakeapi.app import ServerConfig
from tests.fakeapi.server import FakeApiServer

if TYPE_CHECKING:
    import kubernetes.aio.client
    import kubernetes.client


@pytest.fixture
def fake_apiserver_config() -> ServerConfig:
    return ServerConfig()


@pytest.fixture
def fake_apiserver(fake_apiserver_config: ServerConfig) -> Iterator[FakeApiServer]:
    server = FakeApiServer(fake_apiserver_config)
    server.start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()


@pytest.fixture
async def fake_apiserver_inloop(fake_apiserver_config: ServerConfig) -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer(fake_apiserver_config)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def kube_config(fake_apiserver: FakeApiServer) -> kubernetes.client.Configuration:
    """kubernetes.client.Configuration pointing at `fake_apiserver`."""
    return fake_apiserver.configuration()


@pytest.fixture
def kube_client(kube_config: kubernetes.client.Configuration) -> Iterator[kubernetes.client.ApiClient]:
    from kubernetes import client

    api_client = client.ApiClient(kube_config)
    try:
        yield api_client
    finally:
        api_client.close()  # type: ignore[no-untyped-call]  # the client's close() is not annotated


@pytest.fixture
def aio_kube_config(fake_apiserver: FakeApiServer) -> kubernetes.aio.client.Configuration:
    """kubernetes.aio.client.Configuration pointing at `fake_apiserver`."""
    return fake_apiserver.aio_configuration()


@pytest.fixture
async def aio_kube_client(
    aio_kube_config: kubernetes.aio.client.Configuration,
) -> AsyncIterator[kubernetes.aio.client.ApiClient]:
    from kubernetes.aio import client

    api_client = client.ApiClient(aio_kube_config)
    try:
        yield api_client
    finally:
        await api_client.close()  # type: ignore[no-untyped-call]  # the client's close() is not annotated


@pytest.fixture
def kubeconfig_file(fake_apiserver: FakeApiServer, tmp_path: Path) -> Path:
    return fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
