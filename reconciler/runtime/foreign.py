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
no write wins that fight, so `RemovalHistory` gives up on a path removed `limit` times within `window` from the
same child, and the reconciler says so in an Event. And `ToleratedFields` closes the other: a foreign
manager may own a value equal to ours plus what the server defaults inside it (someone re-applied an
exported copy of the child). Writing our value
makes the server add its defaults again, so the finding survives the write. After each corrective write the
reconciler looks again at what the server returned; whatever is still found is tolerated for that object,
so such a field costs one write per process lifetime, never a loop.

Every walk is bounded in depth and in the number of findings: managedFields are data anyone can write.
"""

from __future__ import annotations

import copy
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from reconciler.runtime.objects import json_equal, metadata
from reconciler.runtime.paths import Path, PathPart

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


def _step(key: str, live: Any, want: Any) -> tuple[PathPart, Any, Any] | None:
    """Resolve one managedFields key against the live and desired values: (path part, live value, desired value
    or _MISSING); None when the live object no longer holds it."""
    if key.startswith("f:"):
        name = key[2:]
        if not isinstance(live, dict) or name not in live:
            return None
        return name, live[name], want.get(name, _MISSING) if isinstance(want, dict) else _MISSING
    if not isinstance(live, list) or key[:2] not in ("k:", "v:", "i:"):
        return None
    try:
        decoded = json.loads(key[2:])
    except ValueError:
        return None
    if key.startswith("i:"):
        if not isinstance(decoded, int) or not 0 <= decoded < len(live):
            return None
        index = decoded
        wanted = want[index] if isinstance(want, list) and index < len(want) else _MISSING
        return index, live[index], wanted

    def matches(item: Any) -> bool:
        if key.startswith("v:"):
            return json_equal(item, decoded)
        return isinstance(item, dict) and isinstance(decoded, dict) and all(
            json_equal(item.get(k), v) for k, v in decoded.items()
        )

    index = next((i for i, item in enumerate(live) if matches(item)), -1)
    if index < 0:
        return None
    wanted = next((item for item in want if matches(item)), _MISSING) if isinstance(want, list) else _MISSING
    return index, live[index], wanted


def find_foreign(
    live: dict[str, Any],
    desired: dict[str, Any],
    *,
    manager: str,
    ignore: Iterable[Sequence[str]] = (),
    tolerated: Collection[Path] = (),
) -> list[ForeignField]:
    """The fields of `live.spec` another manager owns that `desired` lacks or holds with another value, minus the
    paths in `ignore` (fields that belong to someone else, e.g. an autoscaler's replicas) and `tolerated`."""
    skipped = {tuple(path) for path in ignore} | set(tolerated)
    found: dict[Path, ForeignField] = {}

    def walk(owned: dict[str, Any], live_node: Any, want_node: Any, path: Path, who: str) -> None:
        if len(path) > MAX_DEPTH:
            return
        for key, sub in owned.items():
            if len(found) >= MAX_FINDINGS:
                return
            if key == "." or not isinstance(key, str):
                continue
            step = _step(key, live_node, want_node)
            if step is None:
                continue
            part, live_value, want_value = step
            here = (*path, part)
            if here in skipped or here in found:
                continue
            if want_value is _MISSING:
                found[here] = ForeignField(here, who, rendered=False)
            elif not isinstance(sub, dict) or not (sub.keys() - {"."}):
                if not json_equal(live_value, want_value):  # a whole value (scalar or atomic list) they own
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
    desired: dict[str, Any], findings: Iterable[ForeignField], *, leave: Iterable[Sequence[str]]
) -> dict[str, Any]:
    """A JSON merge patch that makes the child's spec, labels and annotations what we render: the whole desired
    spec (lists, which a merge patch replaces whole, carry our items without anything added to them), and null
    for each foreign map key we do not render. `leave` are paths not ours to write (left out of the patch)."""
    meta = metadata(desired)
    patch: dict[str, Any] = {"metadata": {key: meta[key] for key in ("labels", "annotations") if key in meta}}
    spec = copy.deepcopy(desired.get("spec") or {})
    for path in leave:
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


class ToleratedFields:
    """Per child uid, the foreign paths the API server put back after our corrective write (see module docstring).
    Bounded: the oldest children are forgotten first (which costs at most one more write for each)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._paths: OrderedDict[str, frozenset[Path]] = OrderedDict()

    def get(self, uid: str) -> frozenset[Path]:
        return self._paths.get(uid, frozenset())

    def add(self, uid: str, paths: Iterable[Path]) -> None:
        paths = frozenset(paths)
        if not paths:
            return
        self._paths[uid] = self.get(uid) | paths
        self._paths.move_to_end(uid)
        while len(self._paths) > self._size:
            self._paths.popitem(last=False)

    def forget(self, uid: str) -> None:
        self._paths.pop(uid, None)


class RemovalHistory:
    """Per child (uid and desired revision, as ToleratedFields), when we removed which foreign field: one removed
    `limit` times within `window` seconds keeps being re-added by someone, and is given up until the desired state
    changes (bounded like ToleratedFields). A field is identified by the caller: path, manager and the value
    removed, so that a person's successive different edits of one list are each a new field."""

    def __init__(
        self, *, limit: int = 3, window: float = 600.0, size: int = 4096, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._limit = limit
        self._window = window
        self._size = size
        self._clock = clock
        self._removals: OrderedDict[str, dict[Hashable, list[float]]] = OrderedDict()

    def fought(self, uid: str, paths: Iterable[Hashable]) -> set[Hashable]:
        """Of `paths`, those already removed `limit` times within the window."""
        now, history = self._clock(), self._removals.get(uid, {})
        return {p for p in paths if sum(1 for t in history.get(p, ()) if now - t <= self._window) >= self._limit}

    def removed(self, uid: str, paths: Iterable[Hashable]) -> None:
        now = self._clock()
        history = self._removals.setdefault(uid, {})
        for path in paths:
            recent = [t for t in history.get(path, ()) if now - t <= self._window][-self._limit :]
            history[path] = [*recent, now]
        self._removals.move_to_end(uid)
        while len(self._removals) > self._size:
            self._removals.popitem(last=False)
