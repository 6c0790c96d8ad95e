"""Informer cache rules without a server: event application, re-list diffs, write-through, indexes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from reconciler.modelbooster.kinds import MODEL_SERVER, MODEL_SERVING
from reconciler.runtime.client import ApiError, KubeClient, ObjectList, WatchEvent
from reconciler.runtime.informer import Informer, is_newer, label_index


def obj(name: str, rv: str, *, ns: str = "ns", uid_label: str = "u1", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": {"uid": uid_label}},
        **extra,
    }


@pytest.fixture
def informer() -> Informer:
    client = KubeClient.for_url("http://127.0.0.1:9")  # never contacted by these tests
    return Informer(client, MODEL_SERVING, indexers={"uid": label_index("uid")})


@pytest.fixture
def seen(informer: Informer) -> list[tuple[str, str | None, str | None]]:
    events: list[tuple[str, str | None, str | None]] = []

    def record(event: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        events.append((event, old["metadata"]["resourceVersion"] if old else None,
                       new["metadata"]["resourceVersion"] if new else None))  # fmt: skip

    informer.add_handler(record)
    return events


def test_resource_versions_compare_numerically() -> None:
    assert is_newer("10", "9")
    assert not is_newer("9", "10")
    assert not is_newer("9", "9")
    assert is_newer("abc", "def")  # opaque: anything different moves forward


def test_events_update_the_cache_before_handlers_see_them(informer: Informer, seen: list[Any]) -> None:
    def check(event: str, old: Any, new: Any) -> None:
        assert informer.get("ns", "a") is new

    informer.add_handler(check)
    informer._apply_event("ADDED", obj("a", "1"))
    informer._apply_event("MODIFIED", obj("a", "2"))
    assert seen == [("ADDED", None, "1"), ("MODIFIED", "1", "2")]


def test_deleted_event_removes_and_reports_last_state(informer: Informer, seen: list[Any]) -> None:
    informer._apply_event("ADDED", obj("a", "1"))
    informer._apply_event("DELETED", obj("a", "5"))
    assert informer.get("ns", "a") is None
    assert seen[-1] == ("DELETED", "1", None)
    assert informer.by_index("uid", "u1") == []


def test_write_through_suppresses_the_echo_of_our_own_write(informer: Informer, seen: list[Any]) -> None:
    informer._apply_event("ADDED", obj("a", "1"))
    informer.write_through(obj("a", "3"))
    assert (informer.get("ns", "a") or {})["metadata"]["resourceVersion"] == "3"
    informer._apply_event("MODIFIED", obj("a", "3"))  # the watch event of our write
    assert seen == [("ADDED", None, "1")]


def test_older_events_are_delivered_but_never_roll_the_cache_back(informer: Informer, seen: list[Any]) -> None:
    informer.write_through(obj("a", "5"))
    informer._apply_event("MODIFIED", obj("a", "4"))  # someone else's change, before ours
    assert (informer.get("ns", "a") or {})["metadata"]["resourceVersion"] == "5"
    assert seen == [("MODIFIED", "5", "4")]


def test_write_through_ignores_stale_responses(informer: Informer) -> None:
    informer._apply_event("ADDED", obj("a", "7"))
    informer.write_through(obj("a", "6"))
    assert (informer.get("ns", "a") or {})["metadata"]["resourceVersion"] == "7"


def test_relist_emits_exactly_the_differences(informer: Informer, seen: list[Any]) -> None:
    informer._replace(None, [obj("a", "1"), obj("b", "2")])
    seen.clear()
    informer._replace(None, [obj("a", "1"), obj("b", "3"), obj("c", "4")])
    informer._replace(None, [obj("b", "3"), obj("c", "4")])
    assert seen == [("MODIFIED", "2", "3"), ("ADDED", None, "4"), ("DELETED", "1", None)]
    assert sorted(o["metadata"]["name"] for o in informer.objects()) == ["b", "c"]


def test_relist_of_one_namespace_leaves_others_alone(informer: Informer, seen: list[Any]) -> None:
    informer._replace("x", [obj("a", "1", ns="x")])
    informer._replace("y", [obj("a", "2", ns="y")])
    informer._replace("x", [])
    assert informer.get("y", "a") is not None
    assert informer.get("x", "a") is None
    assert informer.objects("y") == [obj("a", "2", ns="y")]


def test_index_follows_label_changes(informer: Informer) -> None:
    informer._apply_event("ADDED", obj("a", "1", uid_label="u1"))
    informer._apply_event("MODIFIED", obj("a", "2", uid_label="u2"))
    assert informer.by_index("uid", "u1") == []
    assert [o["metadata"]["name"] for o in informer.by_index("uid", "u2")] == ["a"]


def test_transform_applies_to_every_path(seen: list[Any]) -> None:
    client = KubeClient.for_url("http://127.0.0.1:9")
    informer = Informer(client, MODEL_SERVING, transform=lambda o: {**o, "trimmed": True})
    informer._apply_event("ADDED", obj("a", "1"))
    informer._replace(None, [obj("b", "1")])
    informer.write_through(obj("c", "1"))
    assert all(o.get("trimmed") for o in informer.objects())


async def test_informers_sharing_a_gate_list_one_at_a_time() -> None:
    """On start-up every informer lists at once; with a shared gate their pages are never in memory together."""
    release = asyncio.Event()
    calls: list[str] = []

    class SlowClient(KubeClient):
        def __init__(self) -> None:
            pass

        async def list(self, kind: Any, **options: Any) -> ObjectList:
            calls.append(kind.kind)
            await release.wait()
            return ObjectList(items=[], resource_version="1", continue_token=None)

    gate = asyncio.Semaphore(1)
    client = SlowClient()
    first = Informer(client, MODEL_SERVING, list_gate=gate)
    second = Informer(client, MODEL_SERVER, list_gate=gate)
    lists = [asyncio.create_task(first._gated_list(None)), asyncio.create_task(second._gated_list(None))]
    await asyncio.sleep(0.05)
    assert calls == ["ModelServing"]  # the second waits for the gate
    release.set()
    await asyncio.gather(*lists)
    assert calls == ["ModelServing", "ModelServer"]
    assert first.has_synced
    assert second.has_synced


class ScriptedClient(KubeClient):
    """Lists once at resourceVersion 1; each watch replays its script, then breaks or stops the informer."""

    def __init__(self, watches: list[list[WatchEvent | ApiError]]) -> None:
        self.watches = watches
        self.lists: list[str] = []
        self.watched_from: list[str] = []

    async def list(self, kind: Any, **options: Any) -> ObjectList:
        self.lists.append(kind.kind)
        return ObjectList(items=[], resource_version="1", continue_token=None)

    async def watch(self, kind: Any, *, resource_version: str, **options: Any) -> AsyncIterator[WatchEvent]:
        self.watched_from.append(resource_version)
        if not self.watches:
            raise asyncio.CancelledError  # the script is done: end the informer's loop
        for step in self.watches.pop(0):
            if isinstance(step, ApiError):
                raise step
            yield step


def event(kind: str, name: str, rv: str) -> WatchEvent:
    return WatchEvent(type=kind, object=obj(name, rv))  # type: ignore[arg-type]


async def test_a_stream_broken_mid_way_resumes_after_the_last_event_it_delivered() -> None:
    broken = ApiError(status=0, reason="ClientPayloadError", message="stream broken")
    client = ScriptedClient([
        [event("ADDED", "a", "2"), event("MODIFIED", "a", "3"), broken],
        [event("BOOKMARK", "", "7"), ApiError(status=0, reason="ReadTimeout", message="silent")],
        [ApiError(status=410, reason="Expired", message="too old resource version")],
    ])  # fmt: skip
    informer = Informer(client, MODEL_SERVING, backoff_base=0.001)
    seen: list[str] = []
    informer.add_handler(lambda kind, old, new: seen.append(kind))
    with pytest.raises(asyncio.CancelledError):
        await informer.run()
    assert client.watched_from == ["1", "3", "7", "1"]  # a 410 re-lists and watches from the list
    assert client.lists == ["ModelServing", "ModelServing"]
    assert seen == ["ADDED", "MODIFIED", "DELETED"]  # nothing replayed; the re-list no longer has "a"
