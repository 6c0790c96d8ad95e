"""Watches: initial ADDED, resume without gaps or repeats, 410 Expired, bookmarks, timeouts, selectors."""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import new_watch
from tests.apiserver.widgets import GROUP, PLURAL, VERSION, widget
from tests.fakeapi.app import ServerConfig
from tests.fakeapi.server import FakeApiServer


@pytest.fixture
def fake_apiserver_config() -> ServerConfig:
    return ServerConfig(bookmark_interval=0.3)


_SENTINELS = itertools.count()


def stream(custom: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Every event of a watch that the server ends after `timeout_seconds` (1 by default)."""
    kwargs.setdefault("timeout_seconds", 1)
    events = new_watch().stream(custom.list_namespaced_custom_object, GROUP, VERSION, "default", PLURAL, **kwargs)
    return [{"type": e["type"], "object": e["raw_object"]} for e in events]


def stream_until_sentinel(custom: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Events of a watch up to (not including) a sentinel object created now: whatever arrives before the
    sentinel is all the watch delivers for the changes made before it, so no wait for a timeout is needed."""
    sentinel = f"zzz-end-{next(_SENTINELS)}"
    make(custom, sentinel)
    watcher = new_watch()
    seen: list[dict[str, Any]] = []
    for event in watcher.stream(
        custom.list_namespaced_custom_object, GROUP, VERSION, "default", PLURAL, timeout_seconds=5, **kwargs
    ):
        if event["raw_object"].get("metadata", {}).get("name") == sentinel:
            watcher.stop()
            break
        seen.append({"type": event["type"], "object": event["raw_object"]})
    return seen


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    names = [(e["type"], e["object"]["metadata"].get("name", "")) for e in events if e["type"] != "BOOKMARK"]
    return [(kind, "sentinel" if name.startswith("zzz-end-") else name) for kind, name in names]


def make(custom: Any, name: str, **spec: Any) -> dict[str, Any]:
    created: dict[str, Any] = custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, widget(name, **spec)
    )
    return created


def bump(custom: Any, name: str, replicas: int) -> dict[str, Any]:
    patched: dict[str, Any] = custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, name, {"spec": {"replicas": replicas}}
    )
    return patched


def test_watch_without_resource_version_starts_with_synthetic_added(custom: Any) -> None:
    make(custom, "a")
    make(custom, "b")
    assert summary(stream_until_sentinel(custom)) == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_resumes_from_a_resource_version_without_missing_or_repeating(custom: Any) -> None:
    make(custom, "a")
    checkpoint = make(custom, "b")["metadata"]["resourceVersion"]
    bump(custom, "a", 2)
    make(custom, "c")
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "b")
    events = stream_until_sentinel(custom, resource_version=checkpoint)
    assert summary(events) == [("MODIFIED", "a"), ("ADDED", "c"), ("DELETED", "b")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert min(versions) > int(checkpoint)
    # Resuming from the last event seen gives exactly the changes made after it.
    last = str(versions[-1])
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "a")
    bump(custom, "c", 4)
    assert summary(stream_until_sentinel(custom, resource_version=last)) == [
        ("ADDED", "sentinel"),
        ("DELETED", "a"),
        ("MODIFIED", "c"),
    ]


def test_a_client_resumes_across_a_dropped_stream(custom: Any, widgets: FakeApiServer) -> None:
    make(custom, "a")
    watcher = new_watch()
    seen: list[tuple[str, str]] = []
    events = watcher.stream(custom.list_namespaced_custom_object, GROUP, VERSION, "default", PLURAL)
    for event in events:
        seen.append((event["type"], event["raw_object"]["metadata"]["name"]))
        if len(seen) == 1:
            make(custom, "b")
        elif len(seen) == 2:
            widgets.close_watches()  # the client re-watches from the last resourceVersion it saw
            make(custom, "c")
        elif len(seen) == 3:
            watcher.stop()
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


def test_deleted_event_carries_the_last_state_with_a_new_resource_version(custom: Any) -> None:
    updated = bump(custom, make(custom, "a")["metadata"]["name"], 3)
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "a")
    events = stream_until_sentinel(custom, resource_version=updated["metadata"]["resourceVersion"])
    assert summary(events) == [("DELETED", "a")]
    assert events[0]["object"]["spec"]["replicas"] == 3
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) > int(updated["metadata"]["resourceVersion"])


def test_too_old_resource_version_is_an_error_event_with_410(custom: Any, widgets: FakeApiServer) -> None:
    old = make(custom, "a")["metadata"]["resourceVersion"]
    bump(custom, "a", 2)
    widgets.expire_history()
    raw = custom.list_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, watch=True, resource_version=old, timeout_seconds=1, _preload_content=False
    )
    lines = raw.data.decode().splitlines()
    assert len(lines) == 1
    event = json.loads(lines[0])
    assert event["type"] == "ERROR"
    current = widgets.resource_version
    assert event["object"] == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {old} ({current})",
        "reason": "Expired",
        "code": 410,
    }
    with pytest.raises(ApiException) as caught:
        stream(custom, resource_version=old)
    assert caught.value.status == 410


def test_history_size_bounds_what_can_be_replayed(custom: Any, widgets: FakeApiServer) -> None:
    widgets.set_history_size(2)
    start = make(custom, "a")["metadata"]["resourceVersion"]
    second = bump(custom, "a", 2)["metadata"]["resourceVersion"]
    bump(custom, "a", 3)
    bump(custom, "a", 4)
    with pytest.raises(ApiException) as caught:
        stream(custom, resource_version=start)
    assert caught.value.status == 410
    widgets.set_history_size(10)
    assert summary(stream_until_sentinel(custom, resource_version=second)) == [("MODIFIED", "a"), ("MODIFIED", "a")]


def test_bookmarks_when_allowed(custom: Any, widgets: FakeApiServer) -> None:
    make(custom, "a")
    current = widgets.resource_version
    events = stream(custom, resource_version=str(current), allow_watch_bookmarks=True, timeout_seconds=1)
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2  # periodic, plus one before the timeout ends the stream
    assert bookmarks[-1]["object"] == {
        "kind": "Widget",
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {"resourceVersion": str(current)},
    }


def test_no_bookmarks_unless_asked_and_timeout_seconds_ends_the_stream(custom: Any, widgets: FakeApiServer) -> None:
    make(custom, "a")
    started = time.monotonic()
    assert stream(custom, resource_version=str(widgets.resource_version), timeout_seconds=1) == []
    assert 0.9 <= time.monotonic() - started < 3


def test_selector_transitions_are_added_and_deleted_for_the_watcher(core: Any) -> None:
    created = core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c", labels={"app": "x"}))
    )
    core.patch_namespaced_config_map("c", "default", {"metadata": {"labels": {"app": "y"}}})
    core.patch_namespaced_config_map("c", "default", {"data": {"k": "v"}})
    core.patch_namespaced_config_map("c", "default", {"metadata": {"labels": {"app": "x"}}})
    core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="zzz", labels={"app": "x"}))
    )
    watcher = new_watch()
    events = []
    for event in watcher.stream(
        core.list_namespaced_config_map,
        "default",
        label_selector="app=x",
        resource_version=created.metadata.resource_version,
        timeout_seconds=5,
    ):
        if event["raw_object"]["metadata"]["name"] == "zzz":
            watcher.stop()
            break
        events.append(event)
    assert [(e["type"], e["raw_object"]["metadata"]["labels"]["app"]) for e in events] == [
        ("DELETED", "x"),  # stopped matching: the watcher sees the last state it matched
        ("ADDED", "x"),
    ]


def test_watch_of_a_single_object_by_field_selector(custom: Any) -> None:
    start = make(custom, "a")["metadata"]["resourceVersion"]
    make(custom, "b")
    bump(custom, "a", 5)
    bump(custom, "b", 5)
    bump(custom, "b", 6)
    events = new_watch().stream(
        custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        "default",
        PLURAL,
        resource_version=start,
        field_selector="metadata.name=b",
        timeout_seconds=1,
    )
    assert [(e["type"], e["raw_object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"),
        ("MODIFIED", "b"),
        ("MODIFIED", "b"),
    ]


def test_watch_is_scoped_to_its_namespace(custom: Any, widgets: FakeApiServer) -> None:
    widgets.create_namespace("other")
    custom.create_namespaced_custom_object(GROUP, VERSION, "other", PLURAL, widget("x", namespace="other"))
    make(custom, "a")
    assert summary(stream_until_sentinel(custom)) == [("ADDED", "a")]


def test_a_future_resource_version_waits_silently_then_sends_what_follows_it(
    custom: Any, widgets: FakeApiServer
) -> None:
    """kube-apiserver v1.36.2 keeps such a watch open without an error (tests/realapi differential suite); the
    events it then sends are those after the resourceVersion asked for."""
    future = widgets.resource_version + 2
    raw = custom.list_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, watch=True, resource_version=str(future), timeout_seconds=1,
        _preload_content=False,
    )  # fmt: skip
    assert raw.data == b""
    received: list[bytes] = []

    def watch() -> None:
        answer = custom.list_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, watch=True, resource_version=str(future), timeout_seconds=1,
            _preload_content=False,
        )  # fmt: skip
        received.append(answer.data)

    watching = threading.Thread(target=watch)
    watching.start()
    make(custom, "a")  # rv future - 1
    make(custom, "b")  # rv future
    make(custom, "c")  # after it
    watching.join(5)
    events = [json.loads(line) for line in received[0].splitlines() if line.strip()]
    assert summary(events) == [("ADDED", "c")]


def test_send_initial_events_ends_with_an_annotated_bookmark(custom: Any, widgets: FakeApiServer) -> None:
    import urllib3

    make(custom, "a")
    # The generated 37.x client has no sendInitialEvents parameter: ask over plain HTTP.
    answer = urllib3.PoolManager().request(
        "GET",
        f"{widgets.url}/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}",
        fields={
            "watch": "true",
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "1",
        },
    )
    events = [json.loads(line) for line in answer.data.decode().splitlines()]
    assert [e["type"] for e in events[:2]] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"] == {
        "resourceVersion": str(widgets.resource_version),
        "annotations": {"k8s.io/initial-events-end": "true"},
    }


def test_stalled_watch_delivers_nothing_until_resumed(custom: Any, widgets: FakeApiServer) -> None:
    import threading

    make(custom, "a")
    received: list[str] = []
    watcher = new_watch()

    def consume() -> None:
        for event in watcher.stream(
            custom.list_namespaced_custom_object, GROUP, VERSION, "default", PLURAL, timeout_seconds=3
        ):
            received.append(event["raw_object"]["metadata"]["name"])

    thread = threading.Thread(target=consume)
    thread.start()
    deadline = time.monotonic() + 2
    while received != ["a"] and time.monotonic() < deadline:
        time.sleep(0.02)
    widgets.stall_watches()
    make(custom, "b")
    time.sleep(0.3)
    assert received == ["a"]
    widgets.stall_watches(stalled=False)
    deadline = time.monotonic() + 2
    while received != ["a", "b"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert received == ["a", "b"]
    widgets.close_watches()
    thread.join(5)


def test_a_watch_ending_at_its_timeout_never_bookmarks_past_events_it_did_not_send(
    core: Any, fake_apiserver: FakeApiServer
) -> None:
    """A client that resumes from the last resourceVersion it saw (event or bookmark) misses nothing, even when
    `timeoutSeconds` ends the stream while events are still waiting to be written to a slow reader."""
    import socket

    import urllib3

    start = fake_apiserver.resource_version
    # A reader that reads nothing for a while, with a small receive buffer: the server's writes back up.
    pool = urllib3.PoolManager(socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
    opened = time.monotonic()
    answer = pool.request(
        "GET",
        f"{fake_apiserver.url}/api/v1/namespaces/default/configmaps",
        fields={"watch": "true", "resourceVersion": str(start), "allowWatchBookmarks": "true", "timeoutSeconds": "1"},
        preload_content=False,
    )
    filler = "x" * 60_000
    created = []
    for index in range(100):  # ~6 MB of events, more than the socket buffers hold
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm-{index:03d}"), data={"filler": filler})
        created.append(core.create_namespaced_config_map("default", body).metadata.name)
    time.sleep(max(0.0, opened + 1.3 - time.monotonic()))  # past the deadline, with the writer still blocked
    created.append(core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="late"))).metadata.name)  # fmt: skip
    events = [json.loads(line) for line in answer.data.decode().splitlines()]
    seen = [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"]
    resume = events[-1]["object"]["metadata"]["resourceVersion"] if events else str(start)
    resumed = new_watch().stream(core.list_namespaced_config_map, "default", resource_version=resume, timeout_seconds=1)
    seen += [e["raw_object"]["metadata"]["name"] for e in resumed if e["type"] == "ADDED"]
    assert seen == created


def test_a_watch_stalled_at_its_timeout_ends_without_a_bookmark(custom: Any, widgets: FakeApiServer) -> None:
    import urllib3

    start = make(custom, "a")["metadata"]["resourceVersion"]
    answer = urllib3.PoolManager().request(
        "GET",
        f"{widgets.url}/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}",
        fields={"watch": "true", "resourceVersion": start, "allowWatchBookmarks": "true", "timeoutSeconds": "1"},
        preload_content=False,
    )
    assert widgets.stall_watches() == 1
    try:
        make(custom, "b")  # queued behind the stall: the stream that ends at its timeout never sent it
        assert answer.data == b""
    finally:
        widgets.stall_watches(stalled=False)
    assert summary(stream_until_sentinel(custom, resource_version=start)) == [("ADDED", "b")]
