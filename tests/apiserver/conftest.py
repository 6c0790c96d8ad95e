"""Fixtures for the fake API server's own tests.

The fake's fixtures come from tests/fakeapi/fixtures.py; until the root conftest loads that plugin for
the whole suite, they are imported here.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.apiserver.widgets import WIDGET_CRD
from tests.fakeapi.fixtures import (
    aio_kube_client,
    aio_kube_config,
    fake_apiserver,
    fake_apiserver_config,
    fake_apiserver_inloop,
    kube_client,
    kube_config,
    kubeconfig_file,
)
from tests.fakeapi.server import FakeApiServer

__all__ = [
    "aio_kube_client",
    "aio_kube_config",
    "fake_apiserver",
    "fake_apiserver_config",
    "fake_apiserver_inloop",
    "kube_client",
    "kube_config",
    "kubeconfig_file",
]


@pytest.fixture
def widgets(fake_apiserver: FakeApiServer) -> FakeApiServer:
    """The fake with the Widget test CRD registered."""
    fake_apiserver.register_crd(WIDGET_CRD)
    return fake_apiserver


@pytest.fixture
def custom(kube_client: Any, widgets: FakeApiServer) -> Any:
    """CustomObjectsApi against a fake that serves widgets."""
    from kubernetes import client

    return client.CustomObjectsApi(kube_client)


@pytest.fixture
def core(kube_client: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(kube_client)
