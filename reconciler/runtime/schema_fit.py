"""Fitting desired objects to the schemas the cluster serves (docs/design/reconciler.md §14).

A field the served CRD does not declare would be pruned by the API server on every write; every later
comparison would then find it missing and write again, in a loop. So such fields are not written: `fit`
returns the desired objects without them, and the reports not made before for that owner (one per kind and
field), which the caller turns into an Event and a metric.

What a schema prunes from one desired object depends only on its content, which the object's revision label
(a digest of exactly that content) names: each revision is walked once per schema (a bounded memo).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from reconciler.runtime.apply import Desired
from reconciler.runtime.kinds import Kind
from reconciler.runtime.objects import metadata
from reconciler.runtime.paths import Path, without_paths
from reconciler.runtime.pruning import field_name, undeclared_paths

# Bound on the memo of pruned paths per (kind, revision): past it, the memo starts over (~80 bytes an entry).
MEMO_MAX: Final = 50_000
_CLEAN: Final[tuple[Path, ...]] = ()
_HEX: Final = frozenset("0123456789abcdef")

SchemaOf = Callable[[Kind], Mapping[str, Any] | None]


def crd_name(kind: Kind) -> str:
    return f"{kind.plural}.{kind.group}"


class SchemaFit:
    def __init__(
        self, *, schema_of: SchemaOf, revision_label: str, on_report: Callable[[Kind, str], None]
    ) -> None:
        self._schema_of = schema_of
        self._revision_label = revision_label
        self._on_report = on_report
        self._reported: set[tuple[str, str, str]] = set()
        # Per kind, revision digest (as an int: small) -> what the served schema prunes from that desired object.
        self._memo: dict[Kind, dict[int, tuple[Path, ...]]] = {}
        self._memo_size = 0

    def fit(self, owner_uid: str, desired: Sequence[Desired]) -> tuple[list[Desired], list[str]]:
        """`desired` without the fields the served schemas would prune, and the reports not made before for this
        owner (one line per kind and field)."""
        fitted: list[Desired] = []
        reports: list[str] = []
        for child in desired:
            paths = self._pruned(child)
            if not paths:
                fitted.append(child)
                continue
            fitted.append(
                Desired(
                    kind=child.kind,
                    obj=without_paths(child.obj, paths),
                    foreign_after_create=child.foreign_after_create,
                    immutable=child.immutable,
                )
            )
            for path in paths:
                field = field_name(path)
                key = (owner_uid, child.kind.kind, field)
                if key in self._reported:
                    continue
                self._reported.add(key)
                self._on_report(child.kind, field)
                reports.append(
                    f"{child.kind.kind} {child.name}: {field} is not in the served CRD {crd_name(child.kind)}, "
                    "which would drop it; it is not written"
                )
        return fitted, reports

    def forget(self, owner_uid: str) -> None:
        """The owner is gone: its reports may be made again for a new one of the same name."""
        self._reported = {key for key in self._reported if key[0] != owner_uid}

    def schemas_changed(self) -> None:
        self._memo.clear()
        self._memo_size = 0

    def _pruned(self, child: Desired) -> tuple[Path, ...]:
        schema = self._schema_of(child.kind)
        if schema is None:
            return ()
        revision = str((metadata(child.obj).get("labels") or {}).get(self._revision_label) or "")
        key = int(revision, 16) if revision and len(revision) <= 32 and _is_hex(revision) else None
        memo = self._memo.setdefault(child.kind, {})
        if key is not None and key in memo:
            return memo[key]
        paths = tuple(undeclared_paths(child.obj, schema)) or _CLEAN
        if key is not None:
            if self._memo_size >= MEMO_MAX:
                self.schemas_changed()
                memo = self._memo.setdefault(child.kind, {})
            memo[key] = paths
            self._memo_size += 1
        return paths


def _is_hex(text: str) -> bool:
    return all(char in _HEX for char in text)
