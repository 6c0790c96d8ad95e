"""The asyncio client (`kubernetes.aio`) against the fake, served on a thread or on the test's own loop."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.aio import client as aio_client
from kubernetes.aio import watch as aio_watch

from tests.apiserver.widgets import GROUP, PLURAL, VERSION, WIDGET_CRD, widget
from tests.fakeapi.server import FakeApiServer


async def test_crud_with_the_aio_client(aio_kube_client: Any, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.register_crd(WIDGET_CRD)
    custom: Any = aio_client.CustomObjectsApi(aio_kube_client)
    created = await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    assert created["metadata"]["generation"] == 1
    with pytest.raises(aio_client.ApiException) as caught:
        await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    assert caught.value.status == 409
    listed = await custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w1"]


async def test_watch_with_the_aio_client(aio_kube_client: Any, fake_apiserver: FakeApiServer) -> None:
    core: Any = aio_client.CoreV1Api(aio_kube_client)
    start = fake_apiserver.resource_version
    for name in ("a", "b"):
        await core.create_namespaced_config_map(
            "default", aio_client.V1ConfigMap(metadata=aio_client.V1ObjectMeta(name=name))
        )
    await core.delete_namespaced_config_map("a", "default")
    seen: list[tuple[str, str]] = []
    async with aio_watch.Watch() as watcher:  # type: ignore[no-untyped-call]
        async for event in watcher.stream(
            core.list_namespaced_config_map, "default", resource_version=str(start), timeout_seconds=5
        ):
            seen.append((event["type"], event["raw_object"]["metadata"]["name"]))
            if len(seen) == 3:
                watcher.stop()
                break
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]


async def test_server_on_the_tests_own_loop(fake_apiserver_inloop: FakeApiServer) -> None:
    server = fake_apiserver_inloop
    server.register_crd(WIDGET_CRD)  # helpers that do not wait work on the server's own loop too
    async with aio_client.ApiClient(server.aio_configuration()) as api_client:
        custom: Any = aio_client.CustomObjectsApi(api_client)
        owner = await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("owner"))
        child = widget("child")
        child["metadata"]["ownerReferences"] = [
            {"apiVersion": owner["apiVersion"], "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}
        ]
        await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, child)
        await custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "owner")
        await server.asettle()
        listed = await custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
        assert listed["items"] == []
    with pytest.raises(RuntimeError, match="asettle"):
        server.settle()
