"""Foreign-field removal stays bounded whatever other writers do (reconciler/runtime/foreign.py,
docs/design/reconciler.md §5): the managedFields walk is linear in the child, a value many managers co-own is
compared once, a writer that re-adds a field with a new value each time is given up on, and the write-war
bookkeeping holds a bounded number of entries after any number of re-adds, on one child or many."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.runtime import foreign
from reconciler.runtime.foreign import ForeignField, RemovalHistory, Signature, ToleratedFields, find_foreign
from reconciler.runtime.objects import json_equal
from tests.reconciler.harness import Cluster, RunningReconciler, backend, booster, eventually, quiet


class CountingDict(dict[str, Any]):
    """A list item that counts how often the walk reads a field of it."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        CountingDict.reads += 1
        return super().get(key, default)


def env_child(items: Sequence[dict[str, Any]], owned: dict[str, Any], *managers: str) -> dict[str, Any]:
    managed = [{"manager": m, "operation": "Apply", "fieldsV1": {"f:spec": {"f:env": owned}}} for m in managers]
    return {"metadata": {"name": "c", "uid": "u", "managedFields": managed}, "spec": {"env": items}}


def test_list_keys_are_resolved_through_an_index_not_a_scan_per_key() -> None:
    count = 2000
    items = [CountingDict(name=f"V{i}", value="x") for i in range(count)]
    owned: dict[str, Any] = {f'k:{{"name":"V{i}"}}': {".": {}, "f:name": {}, "f:value": {}} for i in range(count)}
    desired = {"spec": {"env": [{"name": f"V{i}", "value": "x"} for i in range(count - 1)]}}
    CountingDict.reads = 0
    found = find_foreign(env_child(items, owned, "kubectl-edit", "policy"), desired, manager="modelbooster")
    assert [f.path for f in found] == [("spec", "env", count - 1)]
    # One read per item to index the list (a scan per key, before, read them 4,002,000 times).
    assert CountingDict.reads <= 2 * count


def test_set_and_multi_field_keys_follow_json_equality() -> None:
    ports = [{"containerPort": 1, "protocol": "TCP"}, {"containerPort": True, "protocol": "TCP"}]
    owned: dict[str, Any] = {'k:{"containerPort":1,"protocol":"TCP"}': {".": {}, "f:name": {}}}
    fields = {"f:spec": {"f:ports": owned, "f:args": {'v:"--a"': {}, "v:true": {}}}}
    live = {"metadata": {"managedFields": [{"manager": "x", "fieldsV1": fields}]},
            "spec": {"ports": ports, "args": ["--a", 1, True]}}  # fmt: skip
    desired = {"spec": {"ports": [{"containerPort": 1.0, "protocol": "TCP"}], "args": ["--a", 1]}}
    found = find_foreign(live, desired, manager="modelbooster")
    # `1` and `1.0` are one JSON number (the port is ours); `true` is not `1`: the set item `true` is theirs.
    assert [(f.path, f.rendered) for f in found] == [(("spec", "args", 2), False)]


def test_a_value_many_managers_co_own_is_compared_once(monkeypatch: Any) -> None:
    compared: list[Any] = []
    original = json_equal  # what the walk calls (runtime/objects.py), counted below

    def counting(a: Any, b: Any) -> bool:
        compared.append(a)
        return original(a, b)

    monkeypatch.setattr(foreign, "json_equal", counting)
    roles = [{"name": f"r{i}", "replicas": 1} for i in range(50)]
    managed = [{"manager": f"m{i}", "operation": "Apply", "fieldsV1": {"f:spec": {"f:roles": {}}}} for i in range(300)]
    live = {"metadata": {"managedFields": managed}, "spec": {"roles": roles}}
    assert find_foreign(live, {"spec": {"roles": copy.deepcopy(roles)}}, manager="modelbooster") == []
    assert len(compared) == 1


def _signature(value: int, *, path: tuple[str, ...] = ("spec", "x")) -> Signature:
    return Signature(path, "writer", f"{value:016x}")


def test_a_writer_with_a_new_value_each_time_is_given_up_on() -> None:
    now = [0.0]
    history = RemovalHistory(limit=3, path_limit=10, window=600.0, clock=lambda: now[0])
    for value in range(9):
        assert history.fought("u", [_signature(value)]) == set()
        history.removed("u", [_signature(value)])
        now[0] += 1.0
    history.removed("u", [_signature(9)])
    assert history.fought("u", [_signature(10)]) == {_signature(10)}
    # Another path of the same child, and the same path of another child, are still corrected.
    assert history.fought("u", [_signature(10, path=("spec", "y"))]) == set()
    assert history.fought("v", [_signature(10)]) == set()
    # The same value three times is the old rule, unchanged.
    for _ in range(3):
        history.removed("w", [_signature(1)])
    assert history.fought("w", [_signature(1)]) == {_signature(1)}
    # A person's edits spread over more than the window are each corrected.
    now[0] += 601.0
    assert history.fought("u", [_signature(11)]) == set()


def test_the_write_war_bookkeeping_stays_bounded_after_a_long_hostile_run() -> None:
    now = [0.0]
    history = RemovalHistory(clock=lambda: now[0], per_child=64, entries=8192)
    tolerated = ToleratedFields(per_child=256, total=16384)
    # 50,000 re-adds on one child, each with a new value at a new path (so that no rule gives up on them).
    for value in range(50_000):
        path = ("spec", "x", str(value))
        history.removed("one", [_signature(value, path=path)])
        tolerated.add("one", [path])
        now[0] += 0.01
    assert len(history) <= 2 * 64
    assert len(tolerated) <= 256
    # Then 20,000 children, each with its own fight.
    for child in range(20_000):
        history.removed(f"child-{child}", [_signature(i, path=("spec", str(i))) for i in range(8)])
        tolerated.add(f"child-{child}", [("spec", str(i)) for i in range(8)])
    assert len(history) <= 8192
    assert len(tolerated) <= 16384
    # What is forgotten is the oldest; the newest is still known.
    assert tolerated.get("child-19999") == {("spec", str(i)) for i in range(8)}
    assert tolerated.get("one") == frozenset()


async def test_a_writer_re_adding_a_new_value_each_time_is_left_alone_after_ten_removals(
    cluster: Cluster, reconciler: RunningReconciler
) -> None:
    """A mutating policy that stamps a new value each time (a timestamp, a counter) re-adds a label inside the
    pod template: ten removals within the window, then it is kept with a Warning event and no more writes."""
    cluster.create_booster(booster("m", backend("a")))
    await eventually(lambda: cluster.condition("m", "Initialized") == "True")
    await quiet(0.3)
    cluster.fake.requests.clear()
    for value in range(12):
        live = cluster.get(MODEL_SERVING, "m-a")
        assert live is not None
        template = copy.deepcopy(live["spec"]["template"])
        entry = template["roles"][0]["entryTemplate"]
        entry.setdefault("metadata", {}).setdefault("labels", {})["stamp.example.com/at"] = f"t{value}"
        await cluster.patch(MODEL_SERVING, "m-a", {"spec": {"template": template}}, manager="stamper")
        await quiet(0.3)
    writes = [e for e in reconciler.writes() if e.resource == "modelservings" and e.verb == "patch"]
    assert len(writes) == 10
    await eventually(lambda: cluster.events("ForeignFieldsKept"))
    assert "set by stamper" in cluster.events("ForeignFieldsKept")[0]["message"]


def test_a_finding_signature_names_path_manager_and_value() -> None:
    live = {"spec": {"x": {"a": 1}}}
    one = foreign.signature(ForeignField(("spec", "x"), "m", rendered=False), live)
    live["spec"]["x"]["a"] = 2
    other = foreign.signature(ForeignField(("spec", "x"), "m", rendered=False), live)
    assert (one.path, one.manager) == (other.path, other.manager)
    assert one.digest != other.digest
