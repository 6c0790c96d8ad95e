"""The controllers a cluster runs that the fake must imitate for API-visible behaviour.

- Garbage collector (kube-controller-manager): background cascade — an object whose owners are all gone
  is deleted; one that still has a live owner loses the references to the gone ones. `orphan` and
  `foregroundDeletion` finalizers are processed like the real one does.
- Namespace controller: a deleting namespace has its content deleted, then goes away.
- CRD finalizer: a deleting CRD has its custom resources deleted, then stops being served and goes away.

They run asynchronously on the server's event loop, as the real ones do; `settle()` waits until they have
nothing left to do (for tests that want to see the outcome).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from tests.fakeapi.crds import CLEANUP_FINALIZER
from tests.fakeapi.resources import ResourceInfo
from tests.fakeapi.rest import CRD_KEY, NAMESPACE_KEY, Registry
from tests.fakeapi.store import Ref
from tests.fakeapi.util import deep_copy
from tests.fakeapi.watch import StoreEvent

Obj = dict[str, Any]


class Controllers:
    def __init__(self, registry: Registry, *, delay: float = 0.0) -> None:
        self.registry = registry
        self.store = registry.store
        self.delay = delay
        self._gone_owners: list[str] = []
        self._check: set[Ref] = set()
        self._finalizing: set[Ref] = set()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        registry.store.hub.listeners.append(self._on_event)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="fakeapi-controllers")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def settle(self) -> None:
        """Wait until every pending garbage-collection / finalization step has run."""
        while True:
            await self._idle.wait()
            await asyncio.sleep(0)
            if self._idle.is_set() and not self._wake.is_set():
                return

    # ---- event intake ------------------------------------------------------------------------------

    def _on_event(self, storage_key: str, event: StoreEvent) -> None:
        metadata = event.obj.get("metadata", {})
        ref = Ref(storage_key, str(metadata.get("namespace", "")), str(metadata.get("name", "")))
        if event.type == "DELETED":
            if metadata.get("uid"):
                self._gone_owners.append(str(metadata["uid"]))
            self._finalizing.discard(ref)
        else:
            if metadata.get("ownerReferences"):
                self._check.add(ref)
            if metadata.get("deletionTimestamp"):
                self._finalizing.add(ref)
        if self._finalizing or event.type == "DELETED" or metadata.get("ownerReferences"):
            self._idle.clear()
            self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.delay:
                await asyncio.sleep(self.delay)
            for _ in range(1000):
                if not self._step():
                    break
            if not self._wake.is_set():
                self._idle.set()

    def _step(self) -> bool:
        """One pass over pending work; True when something was written (so another pass may help)."""
        wrote = False
        gone, self._gone_owners = self._gone_owners, []
        for uid in gone:
            for ref, _ in self.store.dependents(uid):
                self._check.add(ref)
        checks, self._check = self._check, set()
        for ref in sorted(checks, key=lambda r: (r.storage_key, r.namespace, r.name)):
            wrote |= self._check_dependent(ref)
        for ref in sorted(self._finalizing, key=lambda r: (r.storage_key, r.namespace, r.name)):
            wrote |= self._finalize(ref)
        return wrote or bool(self._gone_owners) or bool(self._check)

    # ---- garbage collection ---------------------------------------------------------------------------

    def _owner_state(self, dependent: Obj, ref_obj: Obj) -> str:
        """'solid', 'waiting' (owner in foreground deletion) or 'absent'."""
        found = self.store.by_uid(str(ref_obj.get("uid", "")))
        if found is None:
            return "absent"
        owner_ref, owner = found
        dependent_ns = dependent.get("metadata", {}).get("namespace", "")
        if owner_ref.name != ref_obj.get("name") or owner_ref.namespace not in ("", dependent_ns):
            return "absent"
        owner_meta = owner.get("metadata", {})
        if owner_meta.get("deletionTimestamp") and "foregroundDeletion" in (owner_meta.get("finalizers") or []):
            return "waiting"
        return "solid"

    def _check_dependent(self, ref: Ref) -> bool:
        obj = self.store.get(ref.storage_key, ref.namespace, ref.name)
        res = self.registry.by_storage_key(ref.storage_key)
        if obj is None or res is None:
            return False
        refs = obj.get("metadata", {}).get("ownerReferences") or []
        states = [(r, self._owner_state(obj, r)) for r in refs if isinstance(r, dict)]
        if not states:
            return False
        solid = [r for r, s in states if s == "solid"]
        if solid:
            dangling = [r for r, s in states if s != "solid"]
            if not dangling:
                return False
            updated = deep_copy(obj)
            updated["metadata"]["ownerReferences"] = [r for r in refs if r not in dangling]
            self.registry.commit_update(res, updated, obj, version=res.storage_version)
            return True
        if obj.get("metadata", {}).get("deletionTimestamp"):
            return False
        waiting = any(s == "waiting" for _, s in states)
        block = any(r.get("blockOwnerDeletion") for r, _ in states)
        policy = "Foreground" if waiting and block else "Background"
        self.registry.delete_object(res, obj, policy=policy, dry_run=False, version=res.storage_version)
        return True

    # ---- finalization -------------------------------------------------------------------------------

    def _finalize(self, ref: Ref) -> bool:
        obj = self.store.get(ref.storage_key, ref.namespace, ref.name)
        res = self.registry.by_storage_key(ref.storage_key)
        if obj is None or res is None:
            self._finalizing.discard(ref)
            return False
        finalizers = list(obj.get("metadata", {}).get("finalizers") or [])
        uid = str(obj.get("metadata", {}).get("uid", ""))
        if "orphan" in finalizers:
            for dep_ref, dependent in self.store.dependents(uid):
                dep_res = self.registry.by_storage_key(dep_ref.storage_key)
                if dep_res is None:
                    continue
                updated = deep_copy(dependent)
                updated["metadata"]["ownerReferences"] = [
                    r for r in updated["metadata"].get("ownerReferences") or [] if r.get("uid") != uid
                ]
                if not updated["metadata"]["ownerReferences"]:
                    del updated["metadata"]["ownerReferences"]
                self.registry.commit_update(dep_res, updated, dependent, version=dep_res.storage_version)
            return self._drop_finalizer(res, ref, "orphan")
        if "foregroundDeletion" in finalizers:
            blocking = False
            wrote = False
            for dep_ref, dependent in self.store.dependents(uid):
                if not dependent.get("metadata", {}).get("deletionTimestamp"):
                    wrote |= self._check_dependent(dep_ref)
                for owner in dependent.get("metadata", {}).get("ownerReferences") or []:
                    if owner.get("uid") == uid and owner.get("blockOwnerDeletion"):
                        blocking = True
            if wrote:
                return True
            if not blocking:
                return self._drop_finalizer(res, ref, "foregroundDeletion")
            return False
        if ref.storage_key == NAMESPACE_KEY:
            return self._finalize_namespace(res, obj)
        if ref.storage_key == CRD_KEY and CLEANUP_FINALIZER in finalizers:
            return self._finalize_crd(res, obj)
        return False

    def _drop_finalizer(self, res: ResourceInfo, ref: Ref, name: str) -> bool:
        current = self.store.get(ref.storage_key, ref.namespace, ref.name)
        if current is None:
            return False
        updated = deep_copy(current)
        remaining = [f for f in updated["metadata"].get("finalizers") or [] if f != name]
        if remaining:
            updated["metadata"]["finalizers"] = remaining
        else:
            updated["metadata"].pop("finalizers", None)
        self.registry.commit_update(res, updated, current, version=res.storage_version)
        return True

    def _finalize_namespace(self, res: ResourceInfo, namespace: Obj) -> bool:
        name = namespace["metadata"]["name"]
        wrote = False
        remaining = 0
        for content_res in list(self.registry.served()):
            if not content_res.namespaced or content_res.storage_group is not None:
                continue
            for obj in self.store.items(content_res.storage_key, name):
                remaining += 1
                if not obj.get("metadata", {}).get("deletionTimestamp"):
                    self.registry.delete_object(
                        content_res, obj, policy="Background", dry_run=False, version=content_res.storage_version
                    )
                    wrote = True
        if remaining or wrote:
            return wrote
        if (namespace.get("spec") or {}).get("finalizers"):
            updated = deep_copy(namespace)
            updated["spec"]["finalizers"] = []
            self.registry.commit_update(res, updated, namespace, version=res.storage_version)
            return True
        return False

    def _finalize_crd(self, res: ResourceInfo, crd: Obj) -> bool:
        spec = crd.get("spec") or {}
        served = self.registry.resources.get(
            (str(spec.get("group", "")), str((spec.get("names") or {}).get("plural", "")))
        )
        wrote = False
        if served is not None and served.crd_uid == crd["metadata"].get("uid"):
            instances = self.store.items(served.storage_key)
            for obj in instances:
                if not obj.get("metadata", {}).get("deletionTimestamp"):
                    self.registry.delete_object(
                        served, obj, policy="Background", dry_run=False, version=served.storage_version
                    )
                    wrote = True
            if self.store.items(served.storage_key):
                return wrote
        return self._drop_finalizer(res, Ref(CRD_KEY, "", crd["metadata"]["name"]), CLEANUP_FINALIZER) or wrote
