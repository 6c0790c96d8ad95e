"""`python -m tests.fakeapi`: a standalone server for manual use and for other processes."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from tests.apiserver.widgets import GROUP, PLURAL, VERSION, WIDGET_CRD, widget

ROOT = Path(__file__).resolve().parents[2]


def launch(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.fakeapi", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[dict[str, Any], Path]]:
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(WIDGET_CRD))
    kubeconfig = tmp_path / "kubeconfig"
    process = launch("--port", "0", "--kubeconfig", str(kubeconfig), "--crd", str(crd), "--tls")
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], 30)
    if not readable:
        process.kill()
        pytest.fail(f"the fake API server did not start: {process.communicate()[1]}")
    ready = json.loads(process.stdout.readline())
    yield ready, kubeconfig
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=10)
    assert process.returncode == 0


def test_serves_until_interrupted_and_writes_a_kubeconfig_the_client_accepts(
    served: tuple[dict[str, Any], Path],
) -> None:
    ready, kubeconfig = served
    assert ready["url"].startswith("https://127.0.0.1:")
    assert ready["kubeconfig"] == str(kubeconfig)
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    assert configuration.host == ready["url"]
    with client.ApiClient(configuration) as api_client:
        custom: Any = client.CustomObjectsApi(api_client)
        created = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
        assert created["metadata"]["name"] == "w1"


def test_a_missing_crd_file_is_a_usage_error(tmp_path: Path) -> None:
    process = launch("--crd", str(tmp_path / "missing.yaml"))
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2
    assert f"--crd {tmp_path / 'missing.yaml'}: no such file" in err


def test_a_busy_port_is_reported_without_a_traceback() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = launch("--port", str(port))
        _, err = process.communicate(timeout=20)
    assert process.returncode == 1
    assert err.startswith(f"fakeapi: cannot listen on 127.0.0.1:{port}: ")
    assert "Traceback" not in err
