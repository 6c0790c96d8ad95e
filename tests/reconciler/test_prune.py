"""Which children of a ModelBooster are stale (reconciler/modelbooster/prune.py, docs/design/reconciler.md §6):
those it controls and no longer wants, and the orphans of its model; never another owner's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from reconciler.modelbooster.kinds import MODEL_SERVER, MODEL_SERVING
from reconciler.modelbooster.prune import MODEL_INDEX, UID_INDEX, model_index, stale_children
from reconciler.runtime.apply import Desired
from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from shared.constants import LABEL_MODEL_NAME, LABEL_MODEL_UID

NS, UID = "ns", "u1"
BOOSTER = {"metadata": {"name": "m", "namespace": NS, "uid": UID}}


class Indexed:
    """An informer's indexes over a few objects (the two prune reads)."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = objects

    def by_index(self, index: str, value: str) -> Iterable[dict[str, Any]]:
        for obj in self.objects:
            labels = obj["metadata"].get("labels") or {}
            if (index == UID_INDEX and labels.get(LABEL_MODEL_UID) == value) or (
                index == MODEL_INDEX and value in model_index(obj)
            ):
                yield obj


def child(name: str, *, owner: str | None = UID, uid_label: str = UID) -> dict[str, Any]:
    labels = {LABEL_MODEL_NAME: "m", LABEL_MODEL_UID: uid_label}
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "ModelBooster", "name": "m", "uid": owner, "controller": True}]
    return {"metadata": meta}


def caches(**by_kind: Indexed) -> Mapping[Kind, Informer]:
    kinds = {"serving": MODEL_SERVING, "server": MODEL_SERVER}
    return cast(Mapping[Kind, Informer], {kinds[name]: indexed for name, indexed in by_kind.items()})


def wanted(kind: Kind, name: str) -> Desired:
    return Desired(kind=kind, obj={"metadata": {"name": name, "namespace": NS}})


def names(stale: Any) -> list[tuple[str, str]]:
    return [(kind.kind, live["metadata"]["name"]) for kind, live in stale.children]


def test_what_it_controls_and_no_longer_wants_is_stale() -> None:
    found = stale_children(
        caches(serving=Indexed(child("m-a"), child("m-b")), server=Indexed(child("m-a"))),
        BOOSTER,
        [wanted(MODEL_SERVING, "m-a"), wanted(MODEL_SERVER, "m-a")],
    )
    assert names(found) == [("ModelServing", "m-b")]
    assert not found.orphans


def test_an_orphan_of_its_model_is_stale_and_asks_for_a_fresh_read_of_the_owner() -> None:
    found = stale_children(caches(serving=Indexed(child("m-c", owner=None))), BOOSTER, [])
    assert names(found) == [("ModelServing", "m-c")]
    assert found.orphans


def test_another_owners_child_is_never_stale() -> None:
    found = stale_children(caches(serving=Indexed(child("m-d", owner="u2"))), BOOSTER, [])
    assert names(found) == []
