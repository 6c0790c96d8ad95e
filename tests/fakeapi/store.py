"""The object store: one global resourceVersion counter, objects per resource, indexes, watch events.

Objects handed to the store are owned by it and never changed in place afterwards: every write stores a
new dict. That lets lists, watch history and responses share objects without copying.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakeapi.watch import StoreEvent, WatchHub

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True)
class Ref:
    storage_key: str
    namespace: str
    name: str


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata", {})
    return (str(meta.get("namespace", "")), str(meta.get("name", "")))


def with_rv(obj: Obj, rv: int) -> Obj:
    meta = dict(obj.get("metadata", {}))
    meta["resourceVersion"] = str(rv)
    updated = dict(obj)
    updated["metadata"] = meta
    return updated


class Store:
    def __init__(self, hub: WatchHub) -> None:
        self.rv = 0
        self.hub = hub
        self._objects: dict[str, dict[Key, Obj]] = {}
        self._by_uid: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}
        self.write_count = 0

    # ---- reads -----------------------------------------------------------------------------------------

    def get(self, storage_key: str, namespace: str, name: str) -> Obj | None:
        return self._objects.get(storage_key, {}).get((namespace, name))

    def items(self, storage_key: str, namespace: str | None = None) -> list[Obj]:
        """Objects in key order (namespace, then name), like etcd's key order."""
        bucket = self._objects.get(storage_key, {})
        keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
        return [bucket[k] for k in keys]

    def by_uid(self, uid: str) -> tuple[Ref, Obj] | None:
        ref = self._by_uid.get(uid)
        if ref is None:
            return None
        obj = self.get(ref.storage_key, ref.namespace, ref.name)
        return (ref, obj) if obj is not None else None

    def dependents(self, owner_uid: str) -> list[tuple[Ref, Obj]]:
        found = []
        for ref in sorted(self._dependents.get(owner_uid, set()), key=lambda r: (r.storage_key, r.namespace, r.name)):
            obj = self.get(ref.storage_key, ref.namespace, ref.name)
            if obj is not None:
                found.append((ref, obj))
        return found

    def storage_keys(self) -> list[str]:
        return list(self._objects)

    def count(self) -> int:
        return sum(len(bucket) for bucket in self._objects.values())

    # ---- writes ----------------------------------------------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def insert(self, storage_key: str, obj: Obj) -> Obj:
        rv = self.next_rv()
        stored = with_rv(obj, rv)
        key = key_of(stored)
        self._objects.setdefault(storage_key, {})[key] = stored
        self._index(storage_key, key, stored)
        self.write_count += 1
        self.hub.publish(storage_key, StoreEvent("ADDED", rv, stored, None))
        return stored

    def replace(self, storage_key: str, obj: Obj, old: Obj) -> Obj:
        rv = self.next_rv()
        stored = with_rv(obj, rv)
        key = key_of(stored)
        self._unindex(storage_key, key, old)
        self._objects.setdefault(storage_key, {})[key] = stored
        self._index(storage_key, key, stored)
        self.write_count += 1
        self.hub.publish(storage_key, StoreEvent("MODIFIED", rv, stored, old))
        return stored

    def delete(self, storage_key: str, old: Obj) -> Obj:
        """Remove an object; returns its last state carrying the deletion's resourceVersion."""
        rv = self.next_rv()
        key = key_of(old)
        self._objects.get(storage_key, {}).pop(key, None)
        self._unindex(storage_key, key, old)
        last = with_rv(old, rv)
        self.write_count += 1
        self.hub.publish(storage_key, StoreEvent("DELETED", rv, last, old))
        return last

    def drop_resource(self, storage_key: str) -> list[Obj]:
        """Remove every object of a resource (its CRD was deleted), with DELETED events."""
        return [self.delete(storage_key, obj) for obj in self.items(storage_key)]

    def _index(self, storage_key: str, key: Key, obj: Obj) -> None:
        meta = obj.get("metadata", {})
        ref = Ref(storage_key, key[0], key[1])
        uid = meta.get("uid")
        if uid:
            self._by_uid[str(uid)] = ref
        for owner in meta.get("ownerReferences") or []:
            owner_uid = owner.get("uid") if isinstance(owner, dict) else None
            if owner_uid:
                self._dependents.setdefault(str(owner_uid), set()).add(ref)

    def _unindex(self, storage_key: str, key: Key, obj: Obj) -> None:
        meta = obj.get("metadata", {})
        ref = Ref(storage_key, key[0], key[1])
        uid = meta.get("uid")
        if uid and self._by_uid.get(str(uid)) == ref:
            del self._by_uid[str(uid)]
        for owner in meta.get("ownerReferences") or []:
            owner_uid = owner.get("uid") if isinstance(owner, dict) else None
            if owner_uid:
                refs = self._dependents.get(str(owner_uid))
                if refs is not None:
                    refs.discard(ref)
                    if not refs:
                        del self._dependents[str(owner_uid)]
