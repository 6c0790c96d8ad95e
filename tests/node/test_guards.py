"""What keeps the real-node tier to itself, checked without a rig: when it refuses to run, and which addresses
it may reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.node.conftest import _allowed
from tests.node.rig import usable


def _kit(folder: Path) -> Path:
    for name in ("setup", "build-image"):
        (folder / name).write_text("#!/bin/sh\n")
    return folder


def test_a_folder_without_the_rig_is_named(tmp_path: Path) -> None:
    assert usable(tmp_path) == f"{tmp_path} holds no rig (setup and build-image are missing)"


def test_another_user_than_root_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert usable(_kit(tmp_path)) == "the real node needs root (kubelet, containerd, iptables)"


def test_root_with_the_rig_may_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert usable(_kit(tmp_path)) is None


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        (("127.0.0.1", 80), True),
        (("::1", 80, 0, 0), True),
        (("172.30.255.1", 26443), True),  # the node: the API server
        (("10.244.0.7", 8080), True),  # a pod
        (("10.97.12.3", 443), True),  # a Service
        ("/run/some.sock", True),
        (("172.30.254.1", 80), False),  # build-image's docker bridge: not the tier's business
        (("10.96.0.1", 443), False),
        (("8.8.8.8", 53), False),
        (("pypi.org", 443), False),
    ],
)
def test_only_loopback_and_the_rig_are_reachable(address: object, allowed: bool) -> None:
    assert _allowed(address) is allowed
