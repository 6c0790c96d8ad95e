"""reconciler/runtime/paths.py: keys, indexes and keyed list items, read, resolved, written and removed."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.runtime.paths import Item, PathError, describe, get_path, in_list, resolve, set_path, without_paths

DECODE_REPLICAS = ("spec", "template", "roles", Item("name", "decode"), "replicas")


def serving(*names: str) -> dict[str, Any]:
    return {"spec": {"template": {"roles": [{"name": n, "replicas": i + 1} for i, n in enumerate(names)]}}}


def test_an_item_is_found_by_name_wherever_it_stands() -> None:
    assert get_path(serving("prefill", "decode"), DECODE_REPLICAS) == 2
    assert get_path(serving("decode", "prefill"), DECODE_REPLICAS) == 1
    assert get_path(serving("prefill"), DECODE_REPLICAS) is None
    assert get_path({"spec": {"template": {"roles": {"decode": 1}}}}, DECODE_REPLICAS) is None  # not a list


def test_resolve_names_the_index_as_managed_fields_walks_do() -> None:
    assert resolve(serving("prefill", "decode"), DECODE_REPLICAS) == ("spec", "template", "roles", 1, "replicas")
    assert resolve(serving("decode", "prefill"), DECODE_REPLICAS) == ("spec", "template", "roles", 0, "replicas")
    assert resolve(serving("prefill"), DECODE_REPLICAS) is None


def test_set_path_writes_through_lists_and_items_but_never_makes_an_item() -> None:
    obj = serving("decode", "prefill")
    set_path(obj, DECODE_REPLICAS, 7)
    set_path(obj, ("spec", "template", "roles", 1, "replicas"), 5)
    assert [r["replicas"] for r in obj["spec"]["template"]["roles"]] == [7, 5]
    set_path(obj, ("metadata", "labels", "a"), "b")  # objects on the way are made
    assert obj["metadata"] == {"labels": {"a": "b"}}
    with pytest.raises(PathError, match=r"spec\.template\.roles\[name=decode\] is not there"):
        set_path(serving("prefill"), DECODE_REPLICAS, 1)
    with pytest.raises(PathError, match=r"roles\[4\] is not there"):
        set_path(serving("prefill"), ("spec", "template", "roles", 4), {})
    with pytest.raises(PathError, match="empty path"):
        set_path({}, (), 1)
    with pytest.raises(PathError, match=r"spec\.template\.roles\[0\]\.name is not an object"):
        set_path(serving("prefill"), ("spec", "template", "roles", 0, "name", "x"), 1)


def test_without_paths_removes_the_field_of_the_named_item_only() -> None:
    obj = serving("prefill", "decode")
    stripped = without_paths(obj, [DECODE_REPLICAS])
    assert stripped["spec"]["template"]["roles"] == [{"name": "prefill", "replicas": 1}, {"name": "decode"}]
    assert obj["spec"]["template"]["roles"][1] == {"name": "decode", "replicas": 2}  # left alone


def test_paths_in_words() -> None:
    assert describe(DECODE_REPLICAS) == "spec.template.roles[name=decode].replicas"
    assert in_list(DECODE_REPLICAS)
    assert in_list(("spec", 0))
    assert not in_list(("spec", "replicas"))
