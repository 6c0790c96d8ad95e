"""Writing children: decide whether a child needs a write, and write it without fighting anyone
(docs/design/reconciler.md §3–§7).

Strategy (and why):
- **Create with POST** when the cache has no object of that name. The API server then guarantees we never
  overwrite something that already exists: `409 AlreadyExists` leads to a GET, and the object is judged like a
  cached one (ours, adoptable, or refused) and cached when it carries our labels. A server-side apply cannot
  express "create only".
- **Adopt deliberately** (`adoptable`): an object without a controller reference that carries the owner's
  selector labels, or whose reference names the owner without `controller: true`, after a fresh check that
  the owner still exists (`can_adopt`). Anything else of that name raises NotControlledError, which names the
  object and the command that frees the name; a terminating child raises ChildTerminating.
- **Update with server-side apply** (`fieldManager=modelbooster`, `force=true`) when a cached child we control
  differs from the desired state. We send only the fields we own, so fields set by others (the autoscaler's
  `spec.replicas`, status written by other controllers) are left alone, and there is no resourceVersion to
  conflict on, so a busy child never makes us loop on 409s.
- **Remove foreign fields with one merge patch**: server-side apply cannot remove a field another manager owns.
  When runtime/foreign.py finds fields another manager added to the spec, the write is a JSON merge patch of
  the whole desired spec (lists replaced whole) with nulls for their keys; see that module for why
  managedFields, not a plain comparison, tell them from server defaults.
- **ModelServing replicas under autoscaling** (docs/design/reconciler.md §7): the create sets `spec.replicas`
  to the desired minimum. Later applies leave it out, because once the autoscaler manages it, it is not ours.
  One trap: with server-side apply, leaving out a field that our *apply* previously owned deletes it (the CRD
  default, 1, would come back). That happens when a backend was not autoscaled before (we applied replicas)
  and is autoscaled now. So while the live `managedFields` still show our apply owning `spec.replicas`, the
  apply carries the *live* value: ownership is kept without changing anything, and it passes to the
  autoscaler on its first write.
- **Replace what cannot change**: a child whose API makes a field immutable (a ModelRoute's `modelName`) and
  whose live value differs from the desired one is deleted (with the uid as precondition) and created anew.
- **Apply only what differs**: a child is written only if the desired object is not a subset of the cached
  one (every field we set has the same value there) or foreign fields were found. Fields the API server
  defaults cause no writes; a hand edit of a field we own does, and is reverted. Because our revision digest
  is a label, a desired change always shows up in the comparison too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.foreign import (
    ForeignField,
    RemovalHistory,
    ToleratedFields,
    describe_differences,
    find_foreign,
    readable,
    removal_patch,
    signature,
)
from reconciler.runtime.informer import Informer, Transform
from reconciler.runtime.kinds import Kind
from reconciler.runtime.lean import full_object
from reconciler.runtime.objects import metadata
from reconciler.runtime.paths import Path, get_path, in_list, set_path, without_paths

Action = Literal["created", "updated", "replaced", "adopted", "unchanged"]
REPLICAS_PATH: tuple[str, ...] = ("spec", "replicas")


# --------------------------------------------------------------------------- comparison
def is_subset(want: Any, have: Any) -> bool:
    """Whether every value in `want` is present and equal in `have` (dicts recursively, lists element-wise)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        for key, value in want.items():
            if value is None:
                if have.get(key) is not None:
                    return False
            elif key not in have or not is_subset(value, have[key]):
                return False
        return True
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return False
        return all(is_subset(w, h) for w, h in zip(want, have, strict=True))
    if isinstance(want, bool) or isinstance(have, bool):
        return type(want) is type(have) and want == have
    return bool(want == have)


def _owner_refs_present(want: Sequence[dict[str, Any]], have: Sequence[dict[str, Any]]) -> bool:
    """ownerReferences is a list keyed by uid: others may add their own references beside ours."""
    by_uid = {ref.get("uid"): ref for ref in have if isinstance(ref, dict)}
    return all(is_subset(ref, by_uid.get(ref.get("uid"))) for ref in want)


def child_matches(desired: dict[str, Any], live: dict[str, Any], *, ignore: Iterable[Path] = ()) -> bool:
    """Whether `live` already carries everything `desired` says (see module docstring)."""
    want = without_paths(desired, ignore)
    want_meta = dict(metadata(want))
    have_meta = metadata(live)
    if not _owner_refs_present(want_meta.pop("ownerReferences", None) or [], have_meta.get("ownerReferences") or []):
        return False
    want["metadata"] = want_meta
    return is_subset(want, live)


# --------------------------------------------------------------------------- ownership
def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in metadata(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj: dict[str, Any], owner_uid: str) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == owner_uid


def _fields_path(path: Sequence[str]) -> list[str]:
    return [f"f:{part}" for part in path]


def manager_owns(obj: dict[str, Any], *, manager: str, path: Sequence[str], operation: str = "Apply") -> bool:
    """Whether `manager`'s `operation` entry in managedFields owns the field at `path`."""
    for entry in metadata(obj).get("managedFields") or ():
        if not isinstance(entry, dict) or entry.get("manager") != manager or entry.get("operation") != operation:
            continue
        if entry.get("subresource"):
            continue
        node: Any = entry.get("fieldsV1") or {}
        for part in _fields_path(path):
            if not isinstance(node, dict) or part not in node:
                node = None
                break
            node = node[part]
        if node is not None:
            return True
    return False


def _entry_time(entry: dict[str, Any]) -> str:
    """An entry's `time` (RFC 3339, whole seconds, set by the API server), or "" when it has none."""
    time = entry.get("time")
    return time if isinstance(time, str) else ""


def _timed(entry: dict[str, Any], time: str) -> dict[str, Any]:
    return {**entry, "time": time} if time else entry


def last_write_time(obj: dict[str, Any], *, manager: str) -> str:
    """When `manager` last changed the object itself (not a subresource): the latest `time` of its entries."""
    times = [
        _entry_time(entry)
        for entry in metadata(obj).get("managedFields") or ()
        if isinstance(entry, dict) and entry.get("manager") == manager and not entry.get("subresource")
    ]
    return max(times, default="")


def spec_written_since(
    obj: dict[str, Any], *, manager: str, since: str, ignore: Collection[str] = ()
) -> bool:
    """Whether a manager other than `manager` owns a field of `spec` (other than the top-level fields in `ignore`)
    through an entry whose `time` is not before `since`: someone wrote the spec at or after that moment. An entry
    without a time counts as recent. The times are the API server's, not the writers'."""
    skipped = {f"f:{name}" for name in ignore} | {"."}
    for entry in metadata(obj).get("managedFields") or ():
        if not isinstance(entry, dict) or entry.get("subresource") or entry.get("manager") == manager:
            continue
        fields = entry.get("fieldsV1")
        spec = fields.get("f:spec") if isinstance(fields, dict) else None
        if not isinstance(spec, dict) or not (spec.keys() - skipped):
            continue
        time = _entry_time(entry)
        if not time or not since or time >= since:
            return True
    return False


def managed_fields_pruner(*, manager: str, paths: Sequence[Sequence[str]] = (REPLICAS_PATH,)) -> Transform:
    """An informer transform that keeps, of managedFields, whether `manager`'s apply owns `paths` and when it last
    wrote, and what other managers own in `spec` (runtime/foreign.py) and when: usually nothing, or an
    autoscaler's `replicas`.

    managedFields often make up a third of an object; the cache needs little of them per child."""

    def prune(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or "managedFields" not in meta:
            return obj
        owned: dict[str, Any] = {}
        for path in paths:
            if manager_owns(obj, manager=manager, path=path):
                node = owned
                for part in _fields_path(path):
                    node = node.setdefault(part, {})
        kept: list[dict[str, Any]] = []
        ours = last_write_time(obj, manager=manager)
        if owned or ours:
            kept.append(_timed({"manager": manager, "operation": "Apply", "fieldsV1": owned}, ours))
        for entry in meta["managedFields"]:
            if not isinstance(entry, dict) or entry.get("subresource") or entry.get("manager") == manager:
                continue
            fields = entry.get("fieldsV1")
            spec = fields.get("f:spec") if isinstance(fields, dict) else None
            if isinstance(spec, dict) and spec:
                foreign = {"manager": str(entry.get("manager") or ""), "operation": str(entry.get("operation") or ""),
                           "fieldsV1": {"f:spec": spec}}  # fmt: skip
                kept.append(_timed(foreign, _entry_time(entry)))
        meta = dict(meta)
        if kept:
            meta["managedFields"] = kept
        else:
            del meta["managedFields"]
        pruned = dict(obj)
        pruned["metadata"] = meta
        return pruned

    return prune


# --------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class Desired:
    """One desired child, and the fields in it that belong to someone else once the object exists."""

    kind: Kind
    obj: dict[str, Any]
    # A path through a list names its item by key (paths.Item), so that it holds wherever the item stands.
    foreign_after_create: tuple[Path, ...] = ()
    # Fields the child's API refuses to change: when the live value differs, the child is deleted and created.
    immutable: tuple[tuple[str, ...], ...] = ()

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    def ref(self) -> str:
        return f"{self.kind.kind} {self.namespace}/{self.name}"

    @property
    def revision(self) -> str:
        """Identifies this desired state among the child's successive ones: its labels, which carry the
        controller's digest of the whole desired content (a new revision starts a clean slate)."""
        labels = self.obj["metadata"].get("labels") or {}
        return f"{hash(tuple(sorted(labels.items()))):x}"


def immutable_changed(desired: Desired, live: dict[str, Any]) -> bool:
    """Whether the live child holds another value of a field that can only be set by creating it."""
    if not desired.immutable:
        return False
    whole = full_object(live)  # the cache may hold a lean entry whose spec is packed
    return any(get_path(whole, path) != get_path(desired.obj, path) for path in desired.immutable)


def apply_body(desired: Desired, live: dict[str, Any], *, manager: str) -> dict[str, Any]:
    """The server-side apply body for updating `live`: the desired object minus fields that are no longer
    ours, except that a field our apply still owns carries its live value (see module docstring), and so does
    a field inside a list item: a list we render is applied whole (an atomic list, such as a ModelServing's
    roles), so an item without the field would delete it."""
    body = without_paths(desired.obj, desired.foreign_after_create)
    for path in desired.foreign_after_create:
        live_value = get_path(live, path)
        if live_value is None or get_path(body, path[:-1]) is None:
            continue
        if in_list(path) or manager_owns(live, manager=manager, path=[str(part) for part in path]):
            set_path(body, path, live_value)
    return body


def fix_command(kind: Kind, namespace: str, name: str) -> str:
    resource = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
    return f"kubectl delete {resource} -n {namespace} {name}"


class NotControlledError(Exception):
    """A same-named object exists that this owner may not take over (controlled by another, or not carrying our
    labels): it is never written or deleted. The message names it and the command that frees the name."""

    def __init__(self, desired: Desired, live: dict[str, Any], owner: str) -> None:
        ref = controller_ref(live)
        meta = metadata(live)
        holder = f"controlled by {ref.get('kind')} {ref.get('name')}" if ref else "not controlled by any owner"
        how = (
            "delete it, and it is created anew"
            if ref
            else "delete it, and it is created anew; or give it our labels, and it is adopted"
        )
        super().__init__(
            f"{desired.ref()} already exists and is {holder}, not by {owner}; refusing to take it over: "
            f"{how} (`{fix_command(desired.kind, desired.namespace, desired.name)}`)"
        )
        self.desired = desired
        self.uid = str(meta.get("uid") or "")
        self.resource_version = str(meta.get("resourceVersion") or "")
        # Who holds the name, for a controller that can say more about its own kind (a sibling's child).
        self.controller = ref
        self.labels: dict[str, str] = dict(meta.get("labels") or {})


class ChildTerminating(Exception):
    """Our child is being deleted (a finalizer holds it): it cannot be written, and is created anew once gone."""

    def __init__(self, desired: Desired, live: dict[str, Any]) -> None:
        meta = metadata(full_object(live))
        finalizers = ", ".join(str(f) for f in meta.get("finalizers") or ()) or "none"
        super().__init__(
            f"{desired.ref()} is terminating since {meta.get('deletionTimestamp')} (finalizers: {finalizers}); "
            "it is created anew once it is gone"
        )


@dataclass(frozen=True)
class ChildOutcome:
    desired: Desired
    action: Action
    # Foreign fields removed (readable path and manager), for the Event.
    removed: tuple[str, ...] = ()
    # Foreign fields left as they are because someone re-adds them each time (RemovalHistory).
    kept: tuple[str, ...] = ()
    # The child as our last write of this reconcile returned it (None when nothing was written): what the server
    # stored for us. The cache may already hold someone's later write, which must never be taken for ours.
    stored: dict[str, Any] | None = field(default=None, compare=False, repr=False)


def adoptable(live: dict[str, Any], *, owner_uid: str, selector: Mapping[str, str]) -> bool:
    """Adoption as Kubernetes' controllers do it: an object without a controller reference that carries our
    selector labels, or one whose reference names us without `controller: true` (someone cleared it)."""
    meta = metadata(live)
    refs = [ref for ref in meta.get("ownerReferences") or () if isinstance(ref, dict)]
    if any(ref.get("uid") == owner_uid for ref in refs):
        return controller_ref(live) is None or is_controlled_by(live, owner_uid)
    labels = meta.get("labels") or {}
    return controller_ref(live) is None and bool(selector) and all(labels.get(k) == v for k, v in selector.items())


async def _never() -> bool:
    return False


async def ensure_child(
    *,
    client: KubeClient,
    cache: Informer,
    desired: Desired,
    owner_uid: str,
    owner: str,
    manager: str,
    selector: Mapping[str, str] | None = None,
    can_adopt: Callable[[], Awaitable[bool]] = _never,
    tolerated: ToleratedFields | None = None,
    history: RemovalHistory | None = None,
) -> ChildOutcome:
    """Create or update one child so that it matches `desired`; raise ApiError, NotControlledError or
    ChildTerminating. `selector`: the labels that make an uncontrolled object ours to adopt; `can_adopt`: a fresh
    check that the owner still exists and is not being deleted (called only when adopting)."""
    selector = selector or {}
    live = cache.get(desired.namespace, desired.name)
    if live is not None and not is_controlled_by(live, owner_uid) and not adoptable(
        live, owner_uid=owner_uid, selector=selector
    ):
        raise NotControlledError(desired, live, owner)
    replaced = False
    if live is not None and immutable_changed(desired, live):
        await delete_child(client=client, cache=cache, kind=desired.kind, live=live)
        live, replaced = None, True
    if live is not None and metadata(live).get("deletionTimestamp"):
        raise ChildTerminating(desired, live)
    if live is None:
        try:
            created = await client.create(desired.kind, desired.obj, field_manager=manager)
        except ApiError as error:
            if not error.already_exists:
                raise
            # Not in our (label-filtered, maybe lagging) cache but present: ours from before a restart, or an
            # orphan of ours, or not ours, or the one just deleted, still finishing its deletion.
            live = await client.get(desired.kind, desired.namespace, desired.name)
            if not is_controlled_by(live, owner_uid) and not adoptable(live, owner_uid=owner_uid, selector=selector):
                raise NotControlledError(desired, live, owner) from None
            if all((metadata(live).get("labels") or {}).get(k) == v for k, v in selector.items()):
                cache.write_through(live)  # it belongs in the cache: the next reconcile must not create it again
            if immutable_changed(desired, live):
                raise ApiError(
                    status=409, reason="Conflict", message=f"{desired.ref()} is being replaced; its deletion is pending"
                ) from None
            if metadata(live).get("deletionTimestamp"):
                raise ChildTerminating(desired, live) from None
        else:
            cache.write_through(created)
            return ChildOutcome(desired, "replaced" if replaced else "created", stored=created)
    live = full_object(live)  # the cache may hold a lean entry: compare with the whole object
    action: Action = "updated"
    stored: dict[str, Any] | None = None
    if not is_controlled_by(live, owner_uid):
        if not await can_adopt():
            raise NotControlledError(desired, live, owner)
        # The apply below sets our controller reference (ownerReferences merge by uid) with everything else.
        live, _ = await client.apply(desired.kind, apply_body(desired, live, manager=manager), field_manager=manager)
        cache.write_through(live)
        action, stored = "adopted", live
    live, removed, kept = await _remove_foreign_fields(
        client=client, cache=cache, desired=desired, live=live, manager=manager, tolerated=tolerated, history=history
    )
    if removed:
        stored = live
    if not removed and action != "adopted" and child_matches(desired.obj, live, ignore=desired.foreign_after_create):
        return ChildOutcome(desired, "unchanged", kept=kept)
    if not child_matches(desired.obj, live, ignore=desired.foreign_after_create):
        stored, _ = await client.apply(desired.kind, apply_body(desired, live, manager=manager), field_manager=manager)
        cache.write_through(stored)
    return ChildOutcome(desired, action, removed, kept, stored=stored)


async def _remove_foreign_fields(
    *,
    client: KubeClient,
    cache: Informer,
    desired: Desired,
    live: dict[str, Any],
    manager: str,
    tolerated: ToleratedFields | None,
    history: RemovalHistory | None,
) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    """Remove what other managers added to the child's spec with one merge patch (runtime/foreign.py); returns
    the child as stored afterwards, what was removed and what was given up (someone keeps re-adding it)."""
    key = f"{(live.get('metadata') or {}).get('uid')}/{desired.revision}"
    ignore = desired.foreign_after_create
    findings = find_foreign(live, desired.obj, manager=manager, ignore=ignore,
                            tolerated=tolerated.get(key) if tolerated is not None else ())  # fmt: skip
    if not findings:
        return live, (), ()
    signatures = {f.path: signature(f, live) for f in findings}
    fought = history.fought(key, signatures.values()) if history is not None else set()
    given_up = {f.path for f in findings if signatures[f.path] in fought}
    kept = tuple(_describe(f, desired.obj, live) for f in findings if f.path in given_up)
    if given_up and tolerated is not None:
        tolerated.add(key, given_up)
    findings = [f for f in findings if f.path not in given_up]
    if not findings:
        return live, (), kept
    removed = tuple(_describe(finding, desired.obj, live) for finding in findings)
    if history is not None:
        history.removed(key, (signatures[f.path] for f in findings))
    patch = removal_patch(desired.obj, findings, leave=ignore, live=live)
    stored = await client.patch(desired.kind, desired.namespace, desired.name, patch, field_manager=manager)
    cache.write_through(stored)
    if tolerated is not None:  # what the server put back is its own (see runtime/foreign.py)
        tolerated.add(key, (f.path for f in find_foreign(stored, desired.obj, manager=manager, ignore=ignore)))
    return stored, removed, kept


def _describe(finding: ForeignField, desired: dict[str, Any], live: dict[str, Any]) -> str:
    """A foreign field for people: the paths inside it that differ from ours (a whole list they own is named by
    what they added to it), and who set it."""
    if finding.rendered:
        want, have = get_path(desired, finding.path), get_path(live, finding.path)
        paths = describe_differences(want, have, finding.path) or [finding.path]
    else:
        paths = [finding.path]
    return ", ".join(readable(path, live) for path in paths) + f" (set by {finding.manager or 'an unnamed manager'})"


async def delete_child(*, client: KubeClient, cache: Informer, kind: Kind, live: dict[str, Any]) -> bool:
    """Delete a stale child; False if it was already gone or replaced by another object of that name."""
    meta = metadata(live)
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    try:
        await client.delete(kind, namespace, name, uid=meta.get("uid"))
    except ApiError as error:
        if error.not_found or error.conflict:
            return False
        raise
    cache.forget_deleted(namespace, name)
    return True
