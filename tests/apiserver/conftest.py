"""Fixtures for the fake API server's own tests (the fake's fixtures come from the root conftest's plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.apiserver.widgets import WIDGET_CRD
from tests.fakeapi.server import FakeApiServer


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
