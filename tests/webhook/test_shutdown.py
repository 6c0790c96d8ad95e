"""Graceful shutdown: the webhook keeps serving for the delay (still ready, every answer closing its connection),
then the listeners close, in-flight requests finish, the process exits."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.webhook.conftest import ServerFactory, TlsFiles, Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import VALIDATE_PATH


async def test_in_flight_request_finishes_and_new_connections_are_refused(
    start_server: ServerFactory, session: aiohttp.ClientSession
) -> None:
    server = await start_server(shutdown_delay=0.3)
    webhook = Webhook(server=server, session=session)
    body = json.dumps(review(operation="CREATE", obj=single_vllm())).encode()
    resume = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield body[:100]
        await resume.wait()
        yield body[100:]

    async def send() -> tuple[int, dict[str, object]]:
        async with session.post(
            webhook.base + VALIDATE_PATH, data=slow_body(), headers={"Content-Type": "application/json"}
        ) as response:
            return response.status, await response.json()

    request = asyncio.create_task(send())
    await webhook.wait_in_flight(VALIDATE_PATH, 1)
    stopping = asyncio.create_task(server.stop())
    await asyncio.sleep(0.1)
    # During the delay the pod stays ready (the Service's fallback while no other pod is), and every answer
    # ends its connection so that the client's next request is balanced anew.
    async with session.get(webhook.metrics_base + "/readyz") as response:
        assert response.status == 200
    other = json.dumps(review(operation="CREATE", obj=single_vllm())).encode()
    async with session.post(
        webhook.base + VALIDATE_PATH, data=other, headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status == 200
        assert response.headers.get("Connection", "").lower() == "close"
    # After the delay the listener closes: no new connections ...
    for _ in range(500):
        try:
            async with session.get(webhook.base + "/healthz"):
                pass
        except aiohttp.ClientConnectorError:
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the HTTPS listener still accepts connections after the shutdown delay")
    assert not stopping.done()  # ... but the request in flight is still being waited for.
    resume.set()
    status, answer = await request
    assert status == 200
    assert answer["response"] == {"uid": json.loads(body)["request"]["uid"], "allowed": True}
    await asyncio.wait_for(stopping, timeout=5)


async def test_a_request_that_never_finishes_is_cut_at_the_timeout(
    start_server: ServerFactory, session: aiohttp.ClientSession
) -> None:
    server = await start_server(shutdown_timeout=0.3)
    webhook = Webhook(server=server, session=session)
    never = asyncio.Event()

    async def stuck_body() -> AsyncIterator[bytes]:
        yield b'{"apiVersion": '
        await never.wait()

    async def send() -> None:
        async with session.post(
            webhook.base + VALIDATE_PATH, data=stuck_body(), headers={"Content-Type": "application/json"}
        ):
            pass

    request = asyncio.create_task(send())
    await webhook.wait_in_flight(VALIDATE_PATH, 1)
    started = time.monotonic()
    await asyncio.wait_for(server.stop(), timeout=5)
    assert time.monotonic() - started < 2
    request.cancel()
    with pytest.raises((asyncio.CancelledError, aiohttp.ClientError)):
        await request


def test_sigterm_stops_the_process_cleanly(tls: TlsFiles, tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "modelbooster.cli",
        "webhook",
        "--bind-address=127.0.0.1",
        "--port=0",
        "--metrics-bind-address=127.0.0.1",
        "--metrics-port=0",
        f"--tls-cert-file={tls.cert_file}",
        f"--tls-private-key-file={tls.key_file}",
        "--log-format=json",
        "--shutdown-timeout=3",
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        ports = None
        for line in process.stdout:
            entry = json.loads(line)
            if entry["msg"] == "webhook serving":
                ports = entry["https_port"], entry["metrics_port"]
                break
        assert ports is not None
        assert all(port > 0 for port in ports)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        rest = [json.loads(line)["msg"] for line in process.stdout]
        assert "shutdown requested" in rest
        assert rest[-1] == "webhook stopped"
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_a_port_in_use_is_a_clean_error(tls: TlsFiles) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "modelbooster.cli",
                "webhook",
                "--bind-address=127.0.0.1",
                f"--port={port}",
                "--metrics-bind-address=127.0.0.1",
                "--metrics-port=0",
                f"--tls-cert-file={tls.cert_file}",
                f"--tls-private-key-file={tls.key_file}",
            ],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr.startswith("modelbooster webhook: cannot listen: ")
    assert "Traceback" not in result.stderr
