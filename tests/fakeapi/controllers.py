"""The controllers a cluster runs that the fake must imitate for API-visible behaviour.

- Garbage collector (kube-controller-manager): background cascade — an object whose owners are all gone
  is deleted; one that still has a live owner loses the references to the gone ones. `orphan` and
  `foregroundDeletion` finalizers are processed like the real one does. Its writes are API requests, as the
  real ones are: DELETEs with a uid precondition, and JSON merge patches (ownerReferences with a uid
  precondition; finalizers with the resourceVersion read) that go through mutating webhooks, schema and
  CEL validation and validating webhooks, as user `system:serviceaccount:kube-system:generic-garbage-collector`.
  So an object that validation refuses keeps its finalizer and stays terminating, retried with backoff
  (and at every write while something is pending) until the write is admitted; `failures` says why.
- Namespace controller: a deleting namespace has its content deleted, then goes away. With `namespace_pace`
  it deletes one kind at a time, in (group, plural) order, that many seconds apart, as the real one works
  through discovery: so a controller sees children go before their owner, as it can on a real cluster.
- CRD finalizer: a deleting CRD has its custom resources deleted, then stops being served and goes away.
  These two write directly (no admission, no validation).

They run asynchronously on the server's event loop, as the real ones do; `settle()` waits until they have
nothing left to do (for tests that want to see the outcome).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from typing import Any, Final

from tests.fakeapi.crds import CLEANUP_FINALIZER
from tests.fakeapi.errors import ApiError
from tests.fakeapi.patch import MERGE_PATCH
from tests.fakeapi.resources import ResourceInfo
from tests.fakeapi.rest import CRD_KEY, NAMESPACE_KEY, Registry, Request
from tests.fakeapi.store import Ref
from tests.fakeapi.util import deep_copy
from tests.fakeapi.watch import StoreEvent

Obj = dict[str, Any]

GC_USER: Final[Obj] = {
    "username": "system:serviceaccount:kube-system:generic-garbage-collector",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
}
# The field manager kube-apiserver derives from the controller manager's User-Agent.
GC_MANAGER: Final = "kube-controller-manager"
_FIRST_RETRY: Final = 0.05
_LAST_RETRY: Final = 2.0


class Controllers:
    def __init__(self, registry: Registry, *, delay: float = 0.0, namespace_pace: float = 0.0) -> None:
        self.registry = registry
        self.store = registry.store
        self.delay = delay
        self.namespace_pace = namespace_pace
        self._namespace_due: dict[str, float] = {}
        self._gone_owners: list[str] = []
        self._check: set[Ref] = set()
        self._finalizing: set[Ref] = set()
        # Garbage-collector writes the API refused (object -> the error), retried with backoff.
        self.failures: dict[Ref, str] = {}
        self._retry_after = _FIRST_RETRY
        self._retry_timer: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        registry.store.hub.listeners.append(self._on_event)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="fakeapi-controllers")

    async def stop(self) -> None:
        if self._retry_timer is not None:
            self._retry_timer.cancel()
            self._retry_timer = None
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
        if self._finalizing or self.failures or event.type == "DELETED" or metadata.get("ownerReferences"):
            self._wake_up()

    def _wake_up(self) -> None:
        self._retry_timer = None
        self._idle.clear()
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.delay:
                await asyncio.sleep(self.delay)
            for _ in range(1000):
                if not await self._step():
                    break
            self._schedule_retry()
            if not self._wake.is_set():
                self._idle.set()

    def _schedule_retry(self) -> None:
        """Refused writes are tried again later, backing off like the real controller's work queue."""
        if not self.failures:
            self._retry_after = _FIRST_RETRY
            return
        if self._retry_timer is None:
            self._retry_timer = asyncio.get_running_loop().call_later(self._retry_after, self._wake_up)
            self._retry_after = min(self._retry_after * 2, _LAST_RETRY)

    async def _step(self) -> bool:
        """One pass over pending work; True when something was written (so another pass may help)."""
        wrote = False
        gone, self._gone_owners = self._gone_owners, []
        for uid in gone:
            for ref, _ in self.store.dependents(uid):
                self._check.add(ref)
        # Dependents whose last write was refused are looked at again (finalizing objects always are).
        checks, self._check = self._check | (self.failures.keys() - self._finalizing), set()
        for ref in sorted(checks, key=lambda r: (r.storage_key, r.namespace, r.name)):
            wrote |= await self._check_dependent(ref)
        for ref in sorted(self._finalizing, key=lambda r: (r.storage_key, r.namespace, r.name)):
            wrote |= await self._finalize(ref)
        return wrote or bool(self._gone_owners) or bool(self._check)

    # ---- the garbage collector's requests -------------------------------------------------------------

    def _request(self, res: ResourceInfo, ref: Ref) -> Request:
        return Request(
            res,
            res.storage_version,
            ref.namespace,
            ref.name,
            field_manager=GC_MANAGER,
            user_info=GC_USER,
        )

    async def _gc_write(self, ref: Ref, write: Awaitable[Any]) -> bool:
        """Run one garbage-collector request; False (and remembered in `failures`) when the API refused it.
        A conflict is remembered too: the object changed meanwhile and is looked at again."""
        try:
            await write
        except ApiError as err:
            if err.code == 404:
                self.failures.pop(ref, None)
            else:
                self.failures[ref] = err.message
            return False
        self.failures.pop(ref, None)
        return True

    async def _patch(self, res: ResourceInfo, ref: Ref, patch: Obj) -> bool:
        request = self._request(res, ref)
        return await self._gc_write(ref, self.registry.patch(request, json.dumps(patch).encode(), MERGE_PATCH))

    async def _delete(self, res: ResourceInfo, ref: Ref, uid: str, policy: str) -> bool:
        options = {"propagationPolicy": policy, "preconditions": {"uid": uid}}
        return await self._gc_write(ref, self.registry.delete(self._request(res, ref), options))

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

    async def _check_dependent(self, ref: Ref) -> bool:
        obj = self.store.get(ref.storage_key, ref.namespace, ref.name)
        res = self.registry.by_storage_key(ref.storage_key)
        if obj is None or res is None:
            self.failures.pop(ref, None)
            return False
        refs = obj.get("metadata", {}).get("ownerReferences") or []
        states = [(r, self._owner_state(obj, r)) for r in refs if isinstance(r, dict)]
        if not states:
            return False
        uid = str(obj["metadata"].get("uid", ""))
        solid = [r for r, s in states if s == "solid"]
        if solid:
            dangling = [r for r, s in states if s != "solid"]
            if not dangling:
                self.failures.pop(ref, None)
                return False
            remaining = [r for r in refs if r not in dangling]
            return await self._patch(res, ref, {"metadata": {"ownerReferences": remaining, "uid": uid}})
        if obj.get("metadata", {}).get("deletionTimestamp"):
            self.failures.pop(ref, None)
            return False
        waiting = any(s == "waiting" for _, s in states)
        block = any(r.get("blockOwnerDeletion") for r, _ in states)
        policy = "Foreground" if waiting and block else "Background"
        return await self._delete(res, ref, uid, policy)

    # ---- finalization -------------------------------------------------------------------------------

    async def _finalize(self, ref: Ref) -> bool:
        obj = self.store.get(ref.storage_key, ref.namespace, ref.name)
        res = self.registry.by_storage_key(ref.storage_key)
        if obj is None or res is None:
            self._finalizing.discard(ref)
            self.failures.pop(ref, None)
            return False
        finalizers = list(obj.get("metadata", {}).get("finalizers") or [])
        uid = str(obj.get("metadata", {}).get("uid", ""))
        if "orphan" in finalizers:
            orphaned = True
            for dep_ref, dependent in self.store.dependents(uid):
                dep_res = self.registry.by_storage_key(dep_ref.storage_key)
                if dep_res is None:
                    continue
                dep_meta = dependent["metadata"]
                remaining = [r for r in dep_meta.get("ownerReferences") or [] if r.get("uid") != uid]
                patch = {"metadata": {"ownerReferences": remaining, "uid": dep_meta.get("uid")}}
                orphaned &= await self._patch(dep_res, dep_ref, patch)
            if not orphaned:
                return False
            return await self._drop_finalizer(res, ref, "orphan")
        if "foregroundDeletion" in finalizers:
            blocking = False
            wrote = False
            for dep_ref, dependent in self.store.dependents(uid):
                if not dependent.get("metadata", {}).get("deletionTimestamp"):
                    wrote |= await self._check_dependent(dep_ref)
                for owner in dependent.get("metadata", {}).get("ownerReferences") or []:
                    if owner.get("uid") == uid and owner.get("blockOwnerDeletion"):
                        blocking = True
            if wrote:
                return True
            if not blocking:
                return await self._drop_finalizer(res, ref, "foregroundDeletion")
            return False
        if ref.storage_key == NAMESPACE_KEY:
            return self._finalize_namespace(res, obj)
        if ref.storage_key == CRD_KEY and CLEANUP_FINALIZER in finalizers:
            return self._finalize_crd(res, obj)
        return False

    async def _drop_finalizer(self, res: ResourceInfo, ref: Ref, name: str) -> bool:
        """The garbage collector's finalizer removal: a merge patch of the list, conditional on what it read."""
        current = self.store.get(ref.storage_key, ref.namespace, ref.name)
        if current is None:
            return False
        metadata = current["metadata"]
        remaining = [f for f in metadata.get("finalizers") or [] if f != name]
        patch = {"metadata": {"resourceVersion": metadata.get("resourceVersion"), "finalizers": remaining}}
        return await self._patch(res, ref, patch)

    def _drop_finalizer_directly(self, res: ResourceInfo, ref: Ref, name: str) -> bool:
        """The CRD finalizer's removal of its own finalizer (written without admission or validation)."""
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
        loop = asyncio.get_running_loop()
        due = self._namespace_due.get(name)
        if due is not None and loop.time() < due:
            return False  # paced: the timer set below wakes us
        kinds = sorted(self.registry.served(), key=lambda r: (r.group_resource.group, r.group_resource.resource))
        for content_res in kinds:
            if not content_res.namespaced or content_res.storage_group is not None:
                continue
            for obj in self.store.items(content_res.storage_key, name):
                remaining += 1
                if not obj.get("metadata", {}).get("deletionTimestamp"):
                    self.registry.delete_object(
                        content_res, obj, policy="Background", dry_run=False, version=content_res.storage_version
                    )
                    wrote = True
            if wrote and self.namespace_pace > 0:
                self._namespace_due[name] = loop.time() + self.namespace_pace
                loop.call_later(self.namespace_pace, self._wake_up)
                return True
        self._namespace_due.pop(name, None)
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
        crd_ref = Ref(CRD_KEY, "", crd["metadata"]["name"])
        return self._drop_finalizer_directly(res, crd_ref, CLEANUP_FINALIZER) or wrote
