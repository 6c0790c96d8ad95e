"""metadata.managedFields: who owns which fields, updated on every write, and server-side apply.

Implements kube-apiserver's field manager stack for the parts that change behaviour:
- Update operations (POST/PUT/non-apply PATCH) take the fields they add or change from everyone else.
- Apply merges the configuration into the live object, removes fields the applier owned before and no
  longer applies (unless someone else owns them), and reports a 409 conflict when it would change a field
  another manager owns, unless `force=true`.
- Fields reset by the endpoint (status on the main resource, everything but status on /status) are never
  owned through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakeapi import errors
from tests.fakeapi import fieldpath as fp
from tests.fakeapi.fieldpath import FieldSet, Path

Obj = dict[str, Any]


@dataclass
class Entry:
    manager: str
    operation: str  # "Apply" or "Update"
    api_version: str
    subresource: str
    fields: FieldSet
    time: str

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # Appliers are one manager whatever version they apply with (BuildManagerIdentifier).
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def to_json(self) -> Obj:
        entry: Obj = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fp.encode(self.fields),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def read(obj: Obj) -> list[Entry]:
    entries = []
    for raw in obj.get("metadata", {}).get("managedFields") or []:
        if not isinstance(raw, dict) or not raw.get("manager"):
            continue
        fields = raw.get("fieldsV1") if isinstance(raw.get("fieldsV1"), dict) else {}
        entries.append(
            Entry(
                manager=str(raw["manager"]),
                operation=str(raw.get("operation", "Update")),
                api_version=str(raw.get("apiVersion", "")),
                subresource=str(raw.get("subresource", "")),
                fields=fp.decode(fields or {}),
                time=str(raw.get("time", "")),
            )
        )
    return entries


def write(obj: Obj, entries: list[Entry]) -> None:
    live = [e for e in entries if e.fields]
    live.sort(key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource))
    meta = obj.setdefault("metadata", {})
    if live:
        meta["managedFields"] = [e.to_json() for e in live]
    else:
        meta.pop("managedFields", None)


def is_reset(value: Any) -> bool:
    """A request that sets managedFields to `[]` or `[{}]` clears them."""
    return isinstance(value, list) and (not value or (len(value) == 1 and value[0] == {}))


def starting_entries(request_obj: Obj, live: Obj | None) -> list[Entry]:
    """decodeLiveOrNew: the request's managedFields when it sets valid ones, else the live object's."""
    requested = request_obj.get("metadata", {}).get("managedFields")
    if is_reset(requested):
        return []
    from_request = read(request_obj) if requested else []
    if from_request:
        return from_request
    return read(live) if live is not None else []


@dataclass(frozen=True)
class Scope:
    """Which part of the object an endpoint may own: the main resource or the status subresource."""

    subresource: str  # "" or "status"
    status_split: bool  # the kind has a status subresource

    def keep(self, paths: FieldSet) -> FieldSet:
        if not self.status_split:
            return paths
        status = ("f:status",)
        if self.subresource == "status":
            return {p for p in paths if p[:1] == status}
        return {p for p in paths if p[:1] != status}


def _find(entries: list[Entry], identity: tuple[str, str, str, str]) -> Entry | None:
    return next((e for e in entries if e.identity == identity), None)


def record_update(
    *,
    entries: list[Entry],
    live: Obj | None,
    new: Obj,
    schema: Obj | None,
    manager: str,
    api_version: str,
    scope: Scope,
    now: str,
) -> list[Entry]:
    """Ownership after a non-apply write: the writer takes what it added or changed (force semantics)."""
    added, modified, removed = fp.compare(live if live is not None else {}, new, schema)
    added, modified, removed = scope.keep(added), scope.keep(modified), scope.keep(removed)
    taken = added | modified
    result: list[Entry] = []
    for entry in entries:
        entry.fields = entry.fields - taken - removed
        result.append(entry)
    mine = taken - removed
    if mine:
        identity = (manager, "Update", api_version, scope.subresource)
        own = _find(result, identity)
        if own is None:
            result.append(Entry(manager, "Update", api_version, scope.subresource, set(mine), now))
        else:
            own.fields |= mine
            own.time = now
    return [e for e in result if e.fields]


@dataclass
class ApplyResult:
    obj: Obj
    entries: list[Entry]
    changed: bool


def apply(
    *,
    entries: list[Entry],
    live: Obj,
    config: Obj,
    schema: Obj | None,
    manager: str,
    api_version: str,
    scope: Scope,
    force: bool,
    now: str,
) -> ApplyResult:
    """Server-side apply of `config` onto `live` by `manager` (structured-merge-diff Updater.Apply)."""
    identity = (manager, "Apply", "", scope.subresource)
    previous = _find(entries, identity)
    last_set: FieldSet = set(previous.fields) if previous else set()
    new_set = scope.keep(fp.to_field_set(config, schema))
    merged = fp.merge(live, config, fp.root_schema(schema))

    others = [e for e in entries if e.identity != identity]
    if last_set:
        owned = set(new_set)
        for entry in others:
            owned |= entry.fields
        owned_named = fp.with_named_fields(owned, schema)
        merged_named = fp.with_named_fields(_present_paths(merged, schema), schema)
        last_named = fp.with_named_fields(last_set, schema)
        fp.remove_paths(merged, (merged_named & last_named) - owned_named, schema)

    added, modified, removed = fp.compare(live, merged, schema)
    changed_fields = scope.keep(added | modified)
    removed = scope.keep(removed)
    conflicts: list[tuple[Entry, Path]] = []
    for entry in others:
        for path in sorted(entry.fields & changed_fields):
            conflicts.append((entry, path))
    if conflicts and not force:
        raise conflict_error(conflicts)
    for entry in others:
        entry.fields = entry.fields - changed_fields - removed
    mine = Entry(manager, "Apply", api_version, scope.subresource, new_set, previous.time if previous else now)
    result = [e for e in others if e.fields]
    changed = bool(added or modified or removed)
    if changed or previous is None or previous.fields != new_set:
        mine.time = now
    if new_set:
        result.append(mine)
    return ApplyResult(obj=merged, entries=result, changed=changed)


def _present_paths(obj: Obj, schema: Obj | None) -> FieldSet:
    # Every member path of the object (leaves, list items, empty maps), for pruning decisions.
    return fp.to_field_set(obj, schema) | _all_map_nodes(obj, schema)


def _all_map_nodes(obj: Obj, schema: Obj | None) -> FieldSet:
    found: FieldSet = set()

    def walk(value: Any, path: Path) -> None:
        if isinstance(value, dict):
            for key, child in value.items():
                child_path = (*path, "f:" + key)
                found.add(child_path)
                walk(child, child_path)

    walk(obj, ())
    return found - fp.STRIPPED


def _describe(entry: Entry) -> str:
    text = errors.go_quote(entry.manager)
    if entry.subresource:
        text += f" with subresource {errors.go_quote(entry.subresource)}"
    if entry.operation == "Update":
        text += f" using {entry.api_version}"
        if entry.time:
            text += f" at {entry.time}"
    return text


def conflict_error(conflicts: list[tuple[Entry, Path]]) -> errors.ApiError:
    """409 Conflict with one cause per conflicting field (apiserver NewConflictError)."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_describe(entry)}",
            "field": fp.path_string(path),
        }
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {_describe(entry)}: {fp.path_string(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(_describe(entry), []).append(fp.path_string(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return errors.apply_conflict(causes, message)
