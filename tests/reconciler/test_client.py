"""The REST client against the fake API server: bodies of every success, Status errors, watches."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from process.jsontext import encode_json, parse_json
from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import CONFIG_MAP
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS


def config_map(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": data}


@pytest.fixture
async def client(fake: FakeApiServer) -> AsyncIterator[KubeClient]:
    api = KubeClient.for_configuration(fake.aio_configuration(), user_agent="client-test")
    yield api
    await api.close()


async def test_server_side_apply_returns_the_object_and_whether_it_was_created(client: KubeClient) -> None:
    created, was_created = await client.apply(CONFIG_MAP, config_map("a", x="1"), field_manager="t")
    assert was_created is True  # 201: the generated 37.x client would have returned None here
    assert created["data"] == {"x": "1"}
    again, was_created = await client.apply(CONFIG_MAP, config_map("a", x="1"), field_manager="t")
    assert was_created is False
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_errors_carry_status_reason_and_message(client: KubeClient) -> None:
    await client.create(CONFIG_MAP, config_map("b"))
    with pytest.raises(ApiError) as exists:
        await client.create(CONFIG_MAP, config_map("b"))
    assert exists.value.already_exists
    assert exists.value.status == 409
    with pytest.raises(ApiError) as missing:
        await client.get(CONFIG_MAP, NS, "nope")
    assert missing.value.not_found
    assert 'configmaps "nope" not found' in missing.value.message


async def test_transport_failures_are_api_errors_with_status_0() -> None:
    dead = KubeClient.for_url("http://127.0.0.1:9")  # nothing listens on the discard port
    try:
        with pytest.raises(ApiError) as failure:
            await dead.get(CONFIG_MAP, NS, "x")
        assert failure.value.status == 0
    finally:
        await dead.close()


async def test_list_paginates_and_watch_streams_from_its_version(client: KubeClient, fake: FakeApiServer) -> None:
    for index in range(5):
        await client.create(CONFIG_MAP, config_map(f"p{index}"))
    first = await client.list(CONFIG_MAP, namespace=NS, limit=2)
    assert len(first.items) == 2
    assert first.continue_token
    second = await client.list(CONFIG_MAP, namespace=NS, limit=10, continue_token=first.continue_token)
    assert len(second.items) == 3

    await client.create(CONFIG_MAP, config_map("later"))
    events = []
    async for event in client.watch(CONFIG_MAP, namespace=NS, resource_version=first.resource_version,
                                    timeout_seconds=1):  # fmt: skip
        events.append((event.type, event.object["metadata"].get("name")))
    assert ("ADDED", "later") in events


async def test_watch_from_an_expired_version_is_gone(client: KubeClient, fake: FakeApiServer) -> None:
    await client.create(CONFIG_MAP, config_map("c"))
    fake.expire_history()
    events = [e async for e in client.watch(CONFIG_MAP, namespace=NS, resource_version="1", timeout_seconds=1)]
    assert events
    assert events[0].type == "ERROR"
    assert events[0].object["code"] == 410


@pytest.mark.parametrize(
    "text",
    [
        b'{"a":1,"a":2,"big":123456789012345678901234567890,"f":1.5,"e":"\\u00e9","n":null,"l":[true]}',
        b'{"lone":"\\ud800"}',  # refused by the native parser: the json module answers
        b"\xef\xbb\xbf{}",  # a byte order mark, likewise
    ],
)
def test_decoding_gives_what_the_json_module_gives(text: bytes) -> None:
    assert parse_json(text) == json.loads(text)


def test_undecodable_text_is_a_value_error_and_bodies_round_trip() -> None:
    with pytest.raises(ValueError, match="Expecting value"):  # the json module's words
        parse_json(b'{"a":')
    body = {"metadata": {"name": "é"}, "spec": {"replicas": 2, "ratio": 0.1, "list": [None, False, {"k": "v"}]}}
    assert json.loads(encode_json(body)) == body


@pytest.mark.parametrize("line", [b"[1]\n", b'"text"\n', b'{"type":"ADDED","object":[]}\n'])
async def test_a_watch_line_that_is_no_event_object_is_an_api_error(
    aiohttp_server: Any, line: bytes
) -> None:
    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(line)
        return response

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/ns/configmaps", stream)
    server = await aiohttp_server(app)
    api = KubeClient.for_url(str(server.make_url("")))
    try:
        with pytest.raises(ApiError) as failure:
            async for _event in api.watch(CONFIG_MAP, namespace="ns", resource_version="1", timeout_seconds=1):
                pass
        assert failure.value.reason == "BadWatchEvent"
    finally:
        await api.close()
