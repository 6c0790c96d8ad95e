"""The real-node tier: the chart's whole life on a real single node (kubelet, containerd, kube-proxy, scheduler
and a real control plane: `../shared/node`, see its README), under a steady ModelBooster write load.

Opt-in, like the real kube-apiserver tests: it runs only when `MODELBOOSTER_NODE_RIG` names the folder holding
the rig's `setup` and `build-image` (`.ci/run` sets it when `../shared/node/setup` exists), because it starts a
cluster on the machine — only one can run at a time — and needs root. Without the variable, or as another
user, or with the rig already running, every test is skipped with the reason; in CI (`CI` set) a set variable
that cannot be honoured fails instead.

The session: the rig started clean (`reset.sh`, `start-all.sh`), the checkout's image built into it, the chart
installed; the scenarios of tests/node/scenarios.py in order; the rig stopped at the end whatever happened. It
takes about 12 minutes on the 2-core build machine (2 more the first time, building the base image).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.node.report import details, table, write_json
from tests.node.rig import RIG_NETWORKS, RIG_VARIABLE, Rig, usable
from tests.node.scenarios import Result, Stage
from tests.node.session import Timings, node_session

REPO_ROOT = Path(__file__).resolve().parents[2]
_RESULTS = pytest.StashKey[list[Result]]()
_TIMINGS = pytest.StashKey[Timings]()
_NETWORKS = tuple(ipaddress.ip_network(network) for network in RIG_NETWORKS)
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _allowed(address: Any) -> bool:
    """Loopback, a Unix socket, or an address of the rig (its node, pods and Services): nothing else."""
    if isinstance(address, (str, bytes)):
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or any(ip in network for network in _NETWORKS)


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _allowed(address):
        raise RuntimeError(f"test tried to reach {address!r}: only loopback and the rig are allowed")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _allowed(address):
        raise RuntimeError(f"test tried to reach {address!r}: only loopback and the rig are allowed")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replaces the suite's loopback-only guard: this tier also talks to the rig's node, pods and Services."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)


def _unusable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{RIG_VARIABLE} is set but the real-node tier cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def node_stage(request: pytest.FixtureRequest) -> Iterator[Stage]:
    kit = os.environ.get(RIG_VARIABLE)
    if not kit:
        pytest.skip(
            f"{RIG_VARIABLE} is not set: the real-node tier needs the rig of ../shared/node and root "
            f"(export {RIG_VARIABLE}=../shared/node; .ci/run does when it exists)"
        )
    problem = usable(Path(kit))
    if problem is not None:
        _unusable(problem)
    if Rig(Path(kit)).running():
        _unusable("the rig is running already (only one can run on a machine); stop it with $RIG/stop-all.sh")
    timings = request.config.stash.setdefault(_TIMINGS, Timings())
    with node_session(kit=Path(kit), checkout=REPO_ROOT, timings=timings) as stage:
        yield stage


@pytest.fixture(scope="session")
def lifecycle_results(request: pytest.FixtureRequest) -> list[Result]:
    return request.config.stash.setdefault(_RESULTS, [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The lifecycle table (failed and unchecked admissions, create -> Initialized per scenario)."""
    results = config.stash.get(_RESULTS, [])
    if not results:
        return
    timings = config.stash.get(_TIMINGS, Timings())
    terminalreporter.write_sep("-", "real node: the chart's lifecycle under load")
    for line in [*table(results).splitlines(), *details(results).splitlines()]:
        terminalreporter.write_line(line)
    terminalreporter.write_line(
        f"rig start {timings.start:.0f} s, image {timings.build:.0f} s, install {timings.install:.0f} s, "
        f"scenarios {sum(result.seconds for result in results):.0f} s, stop {timings.stop:.0f} s"
    )
    kit = os.environ.get(RIG_VARIABLE)
    if kit:
        folder = Rig(Path(kit)).folder
        write_json(results, folder / "logs" / "lifecycle.json")
        terminalreporter.write_line(f"JSON: {folder / 'logs' / 'lifecycle.json'}")
