"""Connection rotation (webhook/rotation.py): a connection older than --connection-max-age is closed after an
answer, so the client reconnects through the Service, but only while the kubelet's readiness probes vouch for
the pod; and after SIGTERM every answer closes its connection."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from tests.webhook.conftest import ServerFactory, TlsFiles, Webhook
from tests.webhook.objects import single_vllm
from tests.webhook.reviews import review
from webhook.app import VALIDATE_PATH
from webhook.rotation import PRUNE_ABOVE, ConnectionRotation, ProbeRecord


class Connection:
    def __init__(self) -> None:
        self.transport: object | None = object()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_probes_vouch_only_once_steady_for_the_silence() -> None:
    clock = Clock()
    probes = ProbeRecord(silence=10.0, clock=clock)
    assert not probes.vouched()  # never probed: outside a pod, or the kubelet has not come yet
    for _ in range(5):  # one probe every 2 s for 8 s: steady, but not yet for 10 s
        probes.answered(ready=True)
        clock.now += 2
    clock.now -= 2
    assert not probes.vouched()
    clock.now += 2
    probes.answered(ready=True)
    assert probes.vouched()  # 10 s of probes without a gap over 10 s


def test_a_silent_kubelet_suspends_rotation_until_probes_are_steady_again() -> None:
    clock = Clock()
    probes = ProbeRecord(silence=6.0, clock=clock)
    for _ in range(5):
        probes.answered(ready=True)
        clock.now += 2
    assert probes.vouched()
    clock.now += 5  # 7 s since the last probe: the kubelet is away
    assert not probes.vouched()
    probes.answered(ready=True)  # back after a gap: counting starts again
    assert not probes.vouched()
    for _ in range(3):
        clock.now += 2
        probes.answered(ready=True)
    assert probes.vouched()


def test_a_probe_answered_not_ready_restarts_the_count() -> None:
    clock = Clock()
    probes = ProbeRecord(silence=4.0, clock=clock)
    for _ in range(4):
        probes.answered(ready=True)
        clock.now += 2
    probes.answered(ready=False)
    assert not probes.vouched()


def test_a_connection_is_due_once_older_than_its_jittered_age_and_vouched_for() -> None:
    clock = Clock()
    probes = ProbeRecord(silence=2.0, clock=clock)
    jitters = iter([0.2, -0.2])
    rotation = ConnectionRotation(max_age=10.0, probes=probes, clock=clock, jitter=lambda: next(jitters))
    first, second = Connection(), Connection()
    assert not rotation.due(first)  # seen now: limit 12 s
    clock.now += 1
    assert not rotation.due(second)  # seen at +1: limit 8 s
    for _ in range(10):  # probes every second, so both are vouched for from now on
        clock.now += 1
        probes.answered(ready=True)
    assert rotation.due(second)  # 10 s old > 8 s
    assert not rotation.due(first)  # 11 s old < 12 s
    clock.now += 1
    assert rotation.due(first)


def test_closed_connections_are_forgotten() -> None:
    rotation = ConnectionRotation(max_age=10.0, probes=ProbeRecord(silence=1.0), jitter=lambda: 0.0)
    connections = [Connection() for _ in range(PRUNE_ABOVE)]
    for connection in connections:
        rotation.due(connection)
    for connection in connections[1:]:
        connection.transport = None
    rotation.due(Connection())
    assert rotation.remembered() == 2  # the one still open, and the new one


def test_no_rotation_without_probes_or_with_a_zero_age() -> None:
    clock = Clock()
    probes = ProbeRecord(silence=2.0, clock=clock)
    rotation = ConnectionRotation(max_age=1.0, probes=probes, clock=clock, jitter=lambda: 0.0)
    connection = Connection()
    rotation.due(connection)
    clock.now += 60
    assert not rotation.due(connection)  # old, but nobody probes: outside a pod, or the kubelet is away
    off = ConnectionRotation(max_age=0.0, probes=probes, clock=clock)
    for _ in range(5):
        clock.now += 1
        probes.answered(ready=True)
    assert not off.due(connection)


async def test_an_old_connection_is_closed_after_an_answer_while_probes_arrive(
    start_server: ServerFactory, tls: TlsFiles
) -> None:
    server = await start_server(connection_max_age=0.3, probe_silence=0.2)
    body = json.dumps(review(operation="CREATE", obj=single_vllm())).encode()
    # A keep-alive client, like kube-apiserver's: one connection for as long as the server keeps it.
    connector = aiohttp.TCPConnector(ssl=tls.client_context(), limit_per_host=1)
    async with aiohttp.ClientSession(connector=connector) as client, aiohttp.ClientSession() as kubelet:
        webhook = Webhook(server=server, session=client)

        async def answer() -> str:
            async with client.post(
                webhook.base + VALIDATE_PATH, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                assert response.status == 200
                return response.headers.get("Connection", "").lower()

        async def probe() -> None:
            async with kubelet.get(webhook.metrics_base + "/readyz") as response:
                assert response.status == 200

        assert await answer() != "close"
        await asyncio.sleep(0.5)  # old enough, but no probe has come
        assert await answer() != "close"
        for _ in range(4):  # the kubelet probes steadily
            await probe()
            await asyncio.sleep(0.1)
        await probe()
        assert await answer() == "close"
        assert await answer() != "close"  # a new connection, young again
    closed = server.state.metrics.registry.get_sample_value(
        "modelbooster_webhook_connections_closed_total", {"reason": "age"}
    )
    assert closed == 1
