"""Fields others added to a child: what the API server records another field manager owning in `spec` that
the desired object does not hold, or holds with another value (docs/design/reconciler.md §5).

Why `managedFields` and not a plain comparison of the live spec with the desired one: the live spec also
holds what the API server filled in (CRD defaults, mutating webhooks). Those are recorded either under the
manager of the write that caused them (ours, for every write we make) or under nobody, so they are never
another manager's, and never make a write. A field that a person or another controller added through the
API is recorded under their manager (`kubectl-patch`, `kubectl-edit`, `kubectl`, ...): that is exactly
"foreign".

A list without `x-kubernetes-list-type` in a CRD is atomic: whoever wrote it last owns it whole (`f:roles:
{}`), so a patch that adds `privileged: true` inside a container makes its manager the owner of the whole
list of roles. Such an owned value that we render is compared exactly; `describe_differences` then names
the paths inside it that differ, for the Event.

Two traps remain. Another controller may re-add what we remove (a policy engine mutating existing objects):
no write wins that fight, so `RemovalHistory` gives up on a field re-added `limit` times within `window` (or on
a path re-added `path_limit` times, whatever the value), and the reconciler says so in an Event. And
`ToleratedFields` closes the other: a foreign manager may own a value equal to ours plus what the server
defaults inside it (someone re-applied an exported copy of the child). Writing our value makes the server add
its defaults again, so the finding survives the write. After each corrective write the reconciler looks again
at what the server returned; whatever is still found is tolerated for that object, so such a field costs one
write per process lifetime, never a loop.

Every walk is bounded in depth and in the number of findings, and linear in the size of the child: managedFields
are data anyone can write. Every per-child record is bounded in count and age, and so is their total.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from reconciler.runtime.objects import json_equal, metadata
from reconciler.runtime.paths import Item, Path, PathPart, get_path, in_list, resolve, set_path, without_paths

MAX_DEPTH: Final = 64
MAX_FINDINGS: Final = 64
_MISSING: Final = object()


@dataclass(frozen=True)
class ForeignField:
    """One foreign field: its path in the live object, who set it, and whether we render a value there."""

    path: Path
    manager: str
    rendered: bool


def readable(path: Sequence[PathPart], obj: Any = None) -> str:
    """`spec.template.roles[0].entryTemplate.spec.containers[engine].securityContext`: list items named by their
    `name` where they have one (read from `obj`), by index otherwise."""
    text = ""
    node = obj
    for part in path:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            text += f"[{name}]" if isinstance(name, str) and name else f"[{part}]"
            node = item
        elif isinstance(part, Item):
            text += f"[{part.value}]"
            node = get_path(node, (part,))
        else:
            text += f".{part}" if text else part
            node = node.get(part) if isinstance(node, dict) else None
    return text


def foreign_entries(obj: dict[str, Any], *, manager: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(manager, operation, its `f:spec` field set) of each managedFields entry of another manager on the main
    resource (status written through its subresource is nobody's concern here)."""
    for entry in metadata(obj).get("managedFields") or ():
        if not isinstance(entry, dict) or entry.get("subresource") or entry.get("manager") == manager:
            continue
        spec = (entry.get("fieldsV1") or {}).get("f:spec") if isinstance(entry.get("fieldsV1"), dict) else None
        if isinstance(spec, dict) and spec:
            yield str(entry.get("manager") or ""), str(entry.get("operation") or ""), spec


def _canonical(value: Any) -> Hashable:
    """A hashable form of a JSON value under JSON equality (`json_equal`): equal values, equal forms; `true`
    and `1` differ (Python's `True == 1` would merge them)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, dict):
        return ("d", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("l", tuple(_canonical(item) for item in value))
    return ("v", value) if isinstance(value, int | float | str) or value is None else ("?", repr(value))


class _ListIndex:
    """Where the items of one list are, by what managedFields names them by: `k:` keys (some fields of an item)
    and `v:` keys (a whole item). Built once per list and field set, so a list of n items named by n keys costs
    O(n) rather than n scans of the list (docs/design/reconciler.md §5)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items
        self._by_fields: dict[tuple[str, ...], dict[Hashable, int]] = {}
        self._by_value: dict[Hashable, int] | None = None

    def find(self, key: str, decoded: Any) -> int:
        """The index of the first item the key names, or -1."""
        if key.startswith("v:"):
            if self._by_value is None:
                self._by_value = {}
                for index, item in enumerate(self._items):
                    self._by_value.setdefault(_canonical(item), index)
            return self._by_value.get(_canonical(decoded), -1)
        if not isinstance(decoded, dict):
            return -1
        fields = tuple(sorted(decoded))
        table = self._by_fields.get(fields)
        if table is None:
            table = self._by_fields[fields] = {}
            for index, item in enumerate(self._items):
                if isinstance(item, dict):
                    table.setdefault(tuple(_atom(item.get(name)) for name in fields), index)
        return table.get(tuple(_atom(decoded[name]) for name in fields), -1)


def _atom(value: Any) -> Hashable:
    """`_canonical`, with strings (what list keys almost always are) as themselves: a string never equals the
    tuple `_canonical` makes of anything else."""
    return value if type(value) is str else _canonical(value)


class _Walk:
    """One walk's memory: list indexes by list identity (the lists outlive the walk), and the paths already
    compared equal, so that managers co-owning a value compare it once."""

    def __init__(self) -> None:
        self._indexes: dict[int, _ListIndex] = {}
        self._steps: dict[tuple[int, str], tuple[PathPart, Any, Any] | None] = {}
        self.equal: set[Path] = set()

    def index(self, items: list[Any]) -> _ListIndex:
        found = self._indexes.get(id(items))
        if found is None:
            found = self._indexes[id(items)] = _ListIndex(items)
        return found

    def step(self, key: str, live: Any, want: Any) -> tuple[PathPart, Any, Any] | None:
        """Resolve one managedFields key against the live and desired values: (path part, live value, desired
        value or _MISSING); None when the live object no longer holds it. A key of a list item is resolved once
        per walk (every manager of the item names it so)."""
        if key.startswith("f:"):
            name = key[2:]
            if not isinstance(live, dict) or name not in live:
                return None
            return name, live[name], want.get(name, _MISSING) if isinstance(want, dict) else _MISSING
        if not isinstance(live, list) or key[:2] not in ("k:", "v:", "i:"):
            return None
        memo = (id(live), key)
        if memo not in self._steps:
            self._steps[memo] = self._list_step(key, live, want)
        return self._steps[memo]

    def _list_step(self, key: str, live: list[Any], want: Any) -> tuple[PathPart, Any, Any] | None:
        try:
            decoded = json.loads(key[2:])
        except ValueError:
            return None
        if key.startswith("i:"):
            if not isinstance(decoded, int) or isinstance(decoded, bool) or not 0 <= decoded < len(live):
                return None
            return decoded, live[decoded], want[decoded] if isinstance(want, list) and decoded < len(want) else _MISSING
        index = self.index(live).find(key, decoded)
        if index < 0:
            return None
        at = self.index(want).find(key, decoded) if isinstance(want, list) else -1
        return index, live[index], want[at] if at >= 0 else _MISSING


def find_foreign(
    live: dict[str, Any],
    desired: dict[str, Any],
    *,
    manager: str,
    ignore: Iterable[Sequence[PathPart]] = (),
    tolerated: Collection[Path] = (),
) -> list[ForeignField]:
    """The fields of `live.spec` another manager owns that `desired` lacks or holds with another value, minus the
    paths in `ignore` (fields that belong to someone else, e.g. an autoscaler's replicas) and `tolerated`.

    An ignored field inside a list item is left out of both sides before they are compared: another manager
    that set only that field of an atomic list (a role's replicas) owns the whole list, which is then equal to
    ours but for what is theirs.

    Linear in the size of the child and its managedFields: every key is resolved through an index of its list
    (`_ListIndex`), and a value several managers own is compared once."""
    ignore = [tuple(path) for path in ignore]
    skipped = {path for path in (resolve(live, path) for path in ignore) if path is not None} | set(tolerated)
    inside = [path for path in ignore if in_list(path)]
    if inside:
        live, desired = without_paths(live, inside), without_paths(desired, inside)
    found: dict[Path, ForeignField] = {}
    memory = _Walk()

    def walk(owned: dict[str, Any], live_node: Any, want_node: Any, path: Path, who: str) -> None:
        if len(path) > MAX_DEPTH:
            return
        for key, sub in owned.items():
            if len(found) >= MAX_FINDINGS:
                return
            if key == "." or not isinstance(key, str):
                continue
            step = memory.step(key, live_node, want_node)
            if step is None:
                continue
            part, live_value, want_value = step
            here = (*path, part)
            if here in skipped or here in found:
                continue
            if want_value is _MISSING:
                found[here] = ForeignField(here, who, rendered=False)
                continue
            if here in memory.equal:
                continue
            leaf = not isinstance(sub, dict) or not (sub.keys() - {"."})
            # Equal to ours, nothing inside can be foreign: one comparison (mostly in C) instead of a walk.
            if json_equal(live_value, want_value):
                memory.equal.add(here)
            elif leaf:  # a whole value (scalar or atomic list) they own
                found[here] = ForeignField(here, who, rendered=True)
            else:
                walk(sub, live_value, want_value, here, who)

    want_spec = desired.get("spec", _MISSING)
    for who, _, owned in foreign_entries(live, manager=manager):
        walk(owned, live.get("spec"), want_spec, ("spec",), who)
    return list(found.values())


def describe_differences(want: Any, have: Any, path: Path = (), *, limit: int = 16) -> list[Path]:
    """Paths at which `have` holds something `want` does not: extra keys, other values, lists of another length."""
    result: list[Path] = []

    def walk(w: Any, h: Any, p: Path) -> None:
        if len(result) >= limit or len(p) > MAX_DEPTH:
            return
        if isinstance(w, dict) and isinstance(h, dict):
            for key, value in h.items():
                if key not in w:
                    result.append((*p, key))
                else:
                    walk(w[key], value, (*p, key))
                if len(result) >= limit:
                    return
        elif isinstance(w, list) and isinstance(h, list) and len(w) == len(h):
            for index, (x, y) in enumerate(zip(w, h, strict=True)):
                walk(x, y, (*p, index))
        elif not json_equal(w, h):
            result.append(p)

    walk(want, have, path)
    return result


def removal_patch(
    desired: dict[str, Any],
    findings: Iterable[ForeignField],
    *,
    leave: Iterable[Sequence[PathPart]],
    live: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A JSON merge patch that makes the child's spec, labels and annotations what we render: the whole desired
    spec (lists, which a merge patch replaces whole, carry our items without anything added to them), and null
    for each foreign map key we do not render. `leave` are paths not ours to write: left out of the patch, or,
    inside a list item (the list is replaced whole), carrying their value in `live`."""
    meta = metadata(desired)
    patch: dict[str, Any] = {"metadata": {key: meta[key] for key in ("labels", "annotations") if key in meta}}
    spec = copy.deepcopy(desired.get("spec") or {})
    for path in leave:
        if in_list(path):
            value = get_path(live, path) if live is not None else None
            if path[0] == "spec" and value is not None and get_path(spec, path[1:-1]) is not None:
                set_path(spec, path[1:], value)
            elif path[0] == "spec":
                spec = without_paths(spec, [path[1:]])
            continue
        if len(path) >= 2 and path[0] == "spec":
            node: Any = spec
            for part in path[1:-1]:
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node.pop(path[-1], None)
    patch["spec"] = spec
    for finding in findings:
        if finding.rendered or any(isinstance(part, int) for part in finding.path):
            continue  # a value we render, or inside a list: the desired value in the patch covers it
        target: dict[str, Any] | None = patch
        for key in finding.path[:-1]:
            child = target.get(str(key)) if target is not None else None
            target = child if isinstance(child, dict) else None
        if target is not None:
            target[str(finding.path[-1])] = None
    return patch


class Signature(NamedTuple):
    """A foreign field as RemovalHistory tells them apart: where, who, and (a digest of) what value."""

    path: Path
    manager: str
    digest: str


def signature(finding: ForeignField, live: dict[str, Any]) -> Signature:
    value = json.dumps(get_path(live, finding.path), sort_keys=True, default=str)
    return Signature(finding.path, finding.manager, hashlib.sha256(value.encode()).hexdigest()[:16])


class ToleratedFields:
    """Per child (uid and desired revision), the foreign paths the API server put back after our corrective write,
    or that RemovalHistory gave up on (see module docstring). Bounded: at most `per_child` paths per child (the
    oldest forgotten first) and `total` paths in all (the children touched longest ago forgotten first); what is
    forgotten costs at most a few more writes, never a loop, because RemovalHistory gives up again."""

    def __init__(self, size: int = 4096, *, per_child: int = 256, total: int = 16384) -> None:
        self._size = size
        self._per_child = per_child
        self._total = total
        self._count = 0
        self._paths: OrderedDict[str, dict[Path, None]] = OrderedDict()  # insertion-ordered sets

    def __len__(self) -> int:
        """Paths held, over every child."""
        return self._count

    def get(self, uid: str) -> frozenset[Path]:
        held = self._paths.get(uid)
        return frozenset(held) if held else frozenset()

    def add(self, uid: str, paths: Iterable[Path]) -> None:
        fresh = [path for path in paths]
        if not fresh:
            return
        held = self._paths.setdefault(uid, {})
        self._count -= len(held)
        for path in fresh:
            held.pop(path, None)
            held[path] = None
        while len(held) > self._per_child:
            del held[next(iter(held))]
        self._count += len(held)
        self._paths.move_to_end(uid)
        while len(self._paths) > self._size or (self._count > self._total and len(self._paths) > 1):
            _, dropped = self._paths.popitem(last=False)
            self._count -= len(dropped)


@dataclass
class _ChildRemovals:
    """One child's recent removals, per signature and per path; each timeline keeps at most its limit."""

    by_signature: OrderedDict[Signature, tuple[float, ...]] = field(default_factory=OrderedDict)
    by_path: OrderedDict[Path, tuple[float, ...]] = field(default_factory=OrderedDict)

    @property
    def entries(self) -> int:
        return len(self.by_signature) + len(self.by_path)


class RemovalHistory:
    """Per child (uid and desired revision, as ToleratedFields), when we removed which foreign field. A field is
    given up on — left as it is, tolerated until the desired state changes — once someone keeps re-adding it:

    - the same value by the same manager `limit` times within `window` seconds (a controller that re-adds what
      it wants), or
    - anything at that path `path_limit` times within the window (a writer that re-adds it with a new value each
      time, which the first rule alone would fight forever: each value is a new signature). A person's
      successive different edits of one field stay corrected: people do not edit a field ten times in ten
      minutes.

    Bounded in time and memory, whatever the writers do: each timeline keeps at most its limit of timestamps and
    drops those older than the window; a child holds at most `per_child` signatures and as many paths (the
    least recently removed forgotten first); at most `entries` in all (the children touched longest ago
    forgotten first). Forgetting costs at most a few more removals before giving up again."""

    def __init__(
        self,
        *,
        limit: int = 3,
        path_limit: int = 10,
        window: float = 600.0,
        size: int = 4096,
        per_child: int = 64,
        entries: int = 8192,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = limit
        self._path_limit = path_limit
        self._window = window
        self._size = size
        self._per_child = per_child
        self._max_entries = entries
        self._clock = clock
        self._entries = 0
        self._children: OrderedDict[str, _ChildRemovals] = OrderedDict()

    def __len__(self) -> int:
        """Signatures and paths held, over every child."""
        return self._entries

    def fought(self, uid: str, signatures: Iterable[Signature]) -> set[Signature]:
        """Of `signatures`, those given up on (class docstring)."""
        child = self._children.get(uid)
        if child is None:
            return set()
        now = self._clock()

        def recent(times: tuple[float, ...] | None) -> int:
            return sum(1 for t in times or () if now - t <= self._window)

        return {
            s for s in signatures
            if recent(child.by_signature.get(s)) >= self._limit or recent(child.by_path.get(s.path)) >= self._path_limit
        }  # fmt: skip

    def removed(self, uid: str, signatures: Iterable[Signature]) -> None:
        now = self._clock()
        child = self._children.get(uid)
        if child is None:
            child = self._children[uid] = _ChildRemovals()
        self._entries -= child.entries
        self._expire(child, now)
        for one in signatures:
            _record(child.by_signature, one, now, keep=self._limit)
            _record(child.by_path, one.path, now, keep=self._path_limit)
        for timelines in (child.by_signature, child.by_path):
            _keep_newest(timelines, self._per_child)
        self._entries += child.entries
        self._children.move_to_end(uid)
        while len(self._children) > self._size or (self._entries > self._max_entries and len(self._children) > 1):
            _, dropped = self._children.popitem(last=False)
            self._entries -= dropped.entries

    def _expire(self, child: _ChildRemovals, now: float) -> None:
        for timelines in (child.by_signature, child.by_path):
            _drop_older(timelines, now - self._window)


def _record(timelines: OrderedDict[Any, tuple[float, ...]], key: Any, now: float, *, keep: int) -> None:
    # A short tuple per timeline (a deque costs ~600 bytes even empty), its newest `keep` times only.
    times = timelines.pop(key, ())
    timelines[key] = (*times, now)[-max(keep, 1) :]  # last: the most recently removed


def _drop_older(timelines: OrderedDict[Any, tuple[float, ...]], since: float) -> None:
    for key in [key for key, times in timelines.items() if not times or times[-1] < since]:
        del timelines[key]


def _keep_newest(timelines: OrderedDict[Any, tuple[float, ...]], count: int) -> None:
    while len(timelines) > count:
        timelines.popitem(last=False)
