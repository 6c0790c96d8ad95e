"""The child kinds the cluster serves, their shape, and their informers (docs/design/reconciler.md §14).

Clusters that run Kthena keep its child CRDs, in one of three generations (shared/autoscaling_generations.py).
From the served CRDs (reconciler/runtime/discovery.py: one CRD watch) this module keeps:
- an informer per child kind, running only while that kind is served (reconciler/runtime/kind_informers.py), so
  a missing kind never holds up readiness, leadership or another ModelBooster;
- the autoscaling generation, read off the served AutoscalingPolicy and Binding schemas;
- for each desired child, the fields the served schema would prune (reconciler/runtime/pruning.py): they are
  not written (the server would drop them, and every later comparison would see them missing and write again
  in a loop), and are reported once per ModelBooster and field (Warning event `FieldNotServed`, metric
  `modelbooster_fields_not_served_total`).

Any change of what is served wakes every ModelBooster: one that needed a kind that has just appeared converges by
itself, one whose kind went away is marked `Failed` with reason `KindNotServed`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from prometheus_client import Counter

from reconciler.modelbooster.kinds import (
    AUTOSCALING_POLICY,
    AUTOSCALING_POLICY_BINDING,
    CHILD_KINDS,
)
from reconciler.runtime.apply import Desired
from reconciler.runtime.discovery import CrdDiscovery, ServedCrd
from reconciler.runtime.informer import Informer
from reconciler.runtime.kind_informers import KindInformers
from reconciler.runtime.kinds import Kind
from reconciler.runtime.manager import Manager
from reconciler.runtime.objects import metadata
from reconciler.runtime.paths import Path, without_paths
from reconciler.runtime.pruning import field_name, undeclared_paths
from reconciler.runtime.source import Handler
from shared.autoscaling_generations import Generation, missing_kinds, served_generation
from shared.constants import LABEL_REVISION

logger = logging.getLogger(__name__)

# Bound on the memo of pruned paths per (kind, revision): past it, the memo starts over (~80 bytes an entry).
_MEMO_MAX: Final = 50_000
_CLEAN: Final[tuple[Path, ...]] = ()
_HEX: Final = frozenset("0123456789abcdef")


def _is_hex(text: str) -> bool:
    return all(char in _HEX for char in text)
# Where our copy of each child CRD is; any generation of Kthena's own serves too.
CHILD_CRDS_DIRECTORY: Final = "charts/modelbooster/charts/child-crds/crds"


def crd_name(kind: Kind) -> str:
    return f"{kind.plural}.{kind.group}"


class ServedChildren(Mapping[Kind, Informer]):
    """The informers of the child kinds that are served and synced, by kind (a kind not served is absent)."""

    def __init__(
        self,
        manager: Manager,
        served: CrdDiscovery,
        *,
        make: Callable[[Kind], Informer],
        kinds: Sequence[Kind] = CHILD_KINDS,
    ) -> None:
        self.served = served
        self.kinds = tuple(kinds)
        self.informers = KindInformers(manager, served, self.kinds, make=make)
        self._callbacks: list[Callable[[], None]] = []
        self._reported: set[tuple[str, str, str]] = set()
        # Per kind, revision digest (as an int: small) -> what the served schema prunes from that desired child.
        # The digest covers exactly the child's desired content, so each revision is walked once per schema.
        self._memo: dict[Kind, dict[int, tuple[Path, ...]]] = {}
        self._memo_size = 0
        self.generation: Generation | None = None
        self._summary = ""
        self.not_served_fields = Counter(
            "modelbooster_fields_not_served_total",
            "Fields of a child that the served CRD would prune, reported once per ModelBooster and field",
            ["kind", "field"],
            registry=manager.metrics.registry,
        )
        manager.metrics.add_condition_gauge(
            name="modelbooster_child_kind_served",
            documentation="1 for each child kind the cluster serves (its informer synced), 0 for one it does not",
            counts=lambda: {kind.kind: int(self.get(kind) is not None) for kind in self.kinds},
            label="kind",
        )
        manager.metrics.add_condition_gauge(
            name="modelbooster_autoscaling_generation",
            documentation="1 for the generation of Kthena's autoscaling CRDs served (none: cannot autoscale)",
            counts=lambda: (
                {g.value: int(self.generation is g) for g in Generation} | {"none": int(not self.generation)}
            ),
            label="generation",
        )
        served.subscribe(self._on_crd_change)
        served.on_synced(self._changed)
        self.informers.on_change(lambda kind: self._changed())

    # ---------------------------------------------------------------- Mapping
    def __getitem__(self, kind: Kind) -> Informer:
        informer = self.informers.get(kind)
        if informer is None:
            raise KeyError(kind)
        return informer

    def __iter__(self) -> Iterator[Kind]:
        return (kind for kind in self.kinds if self.informers.get(kind) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    # ---------------------------------------------------------------- wiring
    def add_handler(self, handler: Handler) -> None:
        """`handler` hears the events of every child kind, including kinds served later."""
        self.informers.add_handler(handler)

    def on_change(self, callback: Callable[[], None]) -> None:
        """`callback()` after anything served changed (a kind appeared, synced, went away, or its schema changed)."""
        self._callbacks.append(callback)

    @property
    def settled(self) -> bool:
        """The CRDs are listed and every served child kind's cache is complete: a reconcile sees the full picture.
        Until then a reconcile does nothing (a change callback wakes every ModelBooster once settled)."""
        return self.served.has_synced and all(self.informers.state(kind) != "syncing" for kind in self.kinds)

    # ---------------------------------------------------------------- questions
    def missing(self, desired: Iterable[Desired], *, autoscaled: bool) -> list[str]:
        """One line per kind the desired children need that the cluster does not serve (empty when all are)."""
        needed: list[Kind] = []
        for child in desired:
            if child.kind not in needed:
                needed.append(child.kind)
        if autoscaled and self.generation is None:
            for name in missing_kinds(self._schema(AUTOSCALING_POLICY), self._schema(AUTOSCALING_POLICY_BINDING)):
                kind = AUTOSCALING_POLICY if name == AUTOSCALING_POLICY.kind else AUTOSCALING_POLICY_BINDING
                if kind not in needed:
                    needed.append(kind)
        return [
            f"the cluster does not serve {kind.kind} ({kind.api_version}, CRD {crd_name(kind)}); install that CRD, "
            f"ours (kubectl apply --server-side -f {CHILD_CRDS_DIRECTORY}/{kind.group}_{kind.plural}.yaml) "
            "or Kthena's own"
            for kind in needed
            if self.get(kind) is None
        ]

    def fit(self, owner_uid: str, desired: Sequence[Desired]) -> tuple[list[Desired], list[str]]:
        """`desired` without the fields the served schemas would prune, and the reports not made before for this
        ModelBooster (one line per kind and field)."""
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
                self.not_served_fields.labels(kind=child.kind.kind, field=field).inc()
                reports.append(
                    f"{child.kind.kind} {child.name}: {field} is not in the served CRD {crd_name(child.kind)}, "
                    "which would drop it; it is not written"
                )
        return fitted, reports

    def forget(self, owner_uid: str) -> None:
        """The ModelBooster is gone: its reports may be made again for a new one of the same name."""
        self._reported = {key for key in self._reported if key[0] != owner_uid}

    # ---------------------------------------------------------------- internals
    def _schema(self, kind: Kind) -> Mapping[str, Any] | None:
        if self.get(kind) is None:
            return None
        version = self.served.served(kind)
        return version.schema if version is not None else None

    def _pruned(self, child: Desired) -> tuple[Path, ...]:
        schema = self._schema(child.kind)
        if schema is None:
            return ()
        revision = str((metadata(child.obj).get("labels") or {}).get(LABEL_REVISION) or "")
        key = int(revision, 16) if revision and len(revision) <= 32 and _is_hex(revision) else None
        memo = self._memo.setdefault(child.kind, {})
        if key is not None and key in memo:
            return memo[key]
        paths = tuple(undeclared_paths(child.obj, schema)) or _CLEAN
        if key is not None:
            if self._memo_size >= _MEMO_MAX:
                self._memo.clear()
                self._memo_size = 0
                memo = self._memo.setdefault(child.kind, {})
            memo[key] = paths
            self._memo_size += 1
        return paths

    def _on_crd_change(self, old: ServedCrd | None, new: ServedCrd | None) -> None:
        crd = new if new is not None else old
        if crd is None or not any((crd.group, crd.plural) == (kind.group, kind.plural) for kind in self.kinds):
            return
        if old is not None and new is not None and old.serving == new.serving and old.versions == new.versions:
            return  # a status or metadata change: nothing served changed
        self._memo.clear()
        self._memo_size = 0
        self._changed()

    def _changed(self) -> None:
        self.generation = served_generation(self._schema(AUTOSCALING_POLICY), self._schema(AUTOSCALING_POLICY_BINDING))
        served = [kind.kind for kind in self.kinds if self.get(kind) is not None]
        absent = [kind.kind for kind in self.kinds if self.get(kind) is None]
        generation = f"{self.generation.value} ({self.generation.releases})" if self.generation else "none"
        summary = (
            f"child kinds served: {', '.join(served) or 'none'}; not served: {', '.join(absent) or 'none'}; "
            f"autoscaling generation: {generation}"
        )
        if summary != self._summary and self.settled:
            self._summary = summary
            logger.info("%s", summary)
        for callback in self._callbacks:
            try:
                callback()
            except Exception:
                logger.exception("served children: change callback failed")
