"""List pages decoded one item at a time (process/jsontext.py `parse_list`), as the CRD informer reads them
(reconciler/runtime/discovery.py): the same values as a whole decode, each item handed to the informer's
transform before the next is decoded, bad text refused as any JSON is, and a page of large CRDs never held whole
in decoded form."""

from __future__ import annotations

import asyncio
import copy
import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from process.jsontext import MalformedJson, parse_json, parse_list
from reconciler.runtime.client import KubeClient
from reconciler.runtime.discovery import CRD_PAGE_SIZE, CrdDiscovery
from reconciler.runtime.manager import Manager, ManagerOptions
from reconciler.runtime.metrics import Metrics
from tests.apiserver.widgets import WIDGET_CRD
from tests.fakeapi.server import FakeApiServer
from tests.webhook.test_jsontext import JSON_VALUES, _typed

LISTS = st.fixed_dictionaries(
    {"kind": st.text(max_size=5), "metadata": st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3),
     "items": st.lists(JSON_VALUES, max_size=6)},
    optional={"extra": JSON_VALUES},
)


@settings(max_examples=200)
@given(LISTS, st.sampled_from([None, 1, 4]))
def test_a_list_decodes_as_a_whole_decode_does(value: dict[str, Any], indent: int | None) -> None:
    body = json.dumps(value, indent=indent, ensure_ascii=indent is None).encode()
    seen: list[Any] = []

    def each(item: Any) -> Any:
        seen.append(item)
        return item

    assert _typed(parse_list(body, each)) == _typed(parse_json(body))
    assert _typed(seen) == _typed(value["items"])


def test_each_item_is_replaced_by_what_the_transform_keeps() -> None:
    body = b' { "items" : [ {"a": 1} , {"a": 2} ] , "metadata" : {"continue": "x"} } '
    assert parse_list(body, lambda item: item["a"]) == {"items": [1, 2], "metadata": {"continue": "x"}}
    assert parse_list(b'{"items": []}', lambda item: 1 / 0) == {"items": []}
    assert parse_list(b"{}", lambda item: item) == {}


@pytest.mark.parametrize(
    "body",
    [b'{"items": [{"a": 1}', b'{"items": [NaN]}', b'{"items": [1]} x', b"[1, 2]", b'{"items": [1,]}', b"",
     b'{"items" [1]}', b'{1: 2}', b'{"items": [1] "x": 2}', b"\xff\xfe"],
)
def test_bad_text_is_refused(body: bytes) -> None:
    with pytest.raises(MalformedJson):
        parse_list(body, lambda item: item)


def test_a_page_of_large_items_is_never_held_whole_in_decoded_form() -> None:
    item = {"spec": {"properties": {f"f{i}": {"description": "d" * 90 + str(i)} for i in range(8000)}}}
    body = json.dumps({"items": [item] * 10}).encode()
    del item
    tracemalloc.start()
    try:
        kept = parse_list(body, lambda obj: {"kept": len(obj["spec"]["properties"])})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept["items"] == [{"kept": 8000}] * 10
    # The text (one copy of the body) and one decoded item at a time; a whole decode holds ten items (about twice
    # the body again).
    assert peak < 1.6 * len(body)


async def test_the_crd_informer_lists_small_pages_and_keeps_only_identities(
    fake_apiserver_inloop: FakeApiServer,
) -> None:
    fake = fake_apiserver_inloop
    for index in range(3 * CRD_PAGE_SIZE):
        crd = copy.deepcopy(WIDGET_CRD)
        group = f"g{index}.example.com"
        crd["metadata"]["name"] = f"widgets.{group}"
        crd["spec"]["group"] = group
        fake.register_crd(crd)
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="test")
    manager = Manager(client, options=ManagerOptions(leader_elect=False, shutdown_timeout=1.0), metrics=Metrics())
    served = CrdDiscovery(manager, groups={"g0.example.com"})
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    try:
        await served.wait_synced()
        lists = [r for r in fake.requests.entries() if r.resource == "customresourcedefinitions" and r.verb == "list"]
        assert {r.query.get("limit") for r in lists} == {str(CRD_PAGE_SIZE)}
        assert len(lists) >= 3
        assert len(served.crds()) >= 3 * CRD_PAGE_SIZE
        kept = served.crd("g0.example.com", "widgets")
        other = served.crd("g1.example.com", "widgets")
        assert kept is not None
        assert other is not None
        assert kept.raw["spec"]["versions"]
        assert "versions" not in other.raw["spec"]
        assert served.informer.get("", "widgets.g1.example.com") == other.raw
    finally:
        stop.set()
        await task
        await client.close()
