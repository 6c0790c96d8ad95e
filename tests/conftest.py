"""Suite-wide guards: tests may talk to loopback only, never to a real cluster or the internet."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

# The fake Kubernetes API server's fixtures (fake_apiserver, kube_config, ...) for every test package.
pytest_plugins = ["tests.fakeapi.fixtures"]

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX paths
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _is_loopback(address):
        raise RuntimeError(f"test tried to reach {address!r}: only loopback is allowed in tests")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _is_loopback(address):
        raise RuntimeError(f"test tried to reach {address!r}: only loopback is allowed in tests")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
