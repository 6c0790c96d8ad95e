"""The child kinds the cluster serves, as one source of the ModelBooster controller (docs/design/reconciler.md §14):
an informer per served child kind, the autoscaling generation and the schema fit, composed from CRD discovery, so
that a kind not served holds nothing up and any change of what is served wakes every ModelBooster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from reconciler.modelbooster.generation import autoscaling_kinds_missing, detect_generation
from reconciler.modelbooster.kinds import CHILD_KINDS
from reconciler.modelbooster.metrics import ModelBoosterMetrics
from reconciler.runtime.apply import Desired
from reconciler.runtime.discovery import CrdDiscovery, ServedCrd
from reconciler.runtime.informer import Informer
from reconciler.runtime.kind_informers import KindInformers
from reconciler.runtime.kinds import Kind
from reconciler.runtime.manager import Manager
from reconciler.runtime.schema_fit import SchemaFit, crd_name
from reconciler.runtime.source import EventType, KeyMapper, Sink
from shared.autoscaling_generations import Generation
from shared.constants import LABEL_REVISION

logger = logging.getLogger(__name__)

# Where our copy of each child CRD is; any generation of Kthena's own serves too.
CHILD_CRDS_DIRECTORY: Final = "charts/modelbooster/charts/child-crds/crds"


class ChildInformers(Mapping[Kind, Informer]):
    """The informers of the child kinds that are served and synced, by kind (a kind not served is absent)."""

    def __init__(
        self,
        manager: Manager,
        discovery: CrdDiscovery,
        *,
        make: Callable[[Kind], Informer],
        metrics: ModelBoosterMetrics,
        kinds: Sequence[Kind] = CHILD_KINDS,
    ) -> None:
        self.discovery = discovery
        self.kinds = tuple(kinds)
        self.informers = KindInformers(manager, discovery, self.kinds, make=make)
        self.fit = SchemaFit(
            schema_of=self.schema,
            revision_label=LABEL_REVISION,
            on_report=lambda kind, field: metrics.not_served_fields.labels(kind=kind.kind, field=field).inc(),
        )
        self.generation: Generation | None = None
        self._sinks: list[Sink] = []
        self._summary = ""
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
        discovery.subscribe(self._on_crd_change)
        discovery.on_synced(self._changed)
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

    # ---------------------------------------------------------------- as a source
    def attach(self, sink: Sink, mapper: KeyMapper) -> None:
        """Each child's event reaches `sink` through `mapper` (kinds served later too); a change of what is
        served wakes every object of the sink."""

        def handler(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            for key in mapper(event, old, new):
                if key.name:
                    sink.enqueue(key)

        self.informers.add_handler(handler)
        self._sinks.append(sink)

    async def wait_synced(self) -> None:
        # The CRD list: until it is complete, nothing is known of what is served. A kind's own informer syncs
        # later, and `settled` keeps every reconcile waiting for it (the kind may never be served).
        await self.discovery.wait_synced()

    @property
    def settled(self) -> bool:
        """The CRDs are listed and every served child kind's cache is complete: a reconcile sees the full picture.
        Until then a reconcile does nothing (every ModelBooster is woken once settled)."""
        return self.discovery.has_synced and all(self.informers.state(kind) != "syncing" for kind in self.kinds)

    # ---------------------------------------------------------------- questions
    def schema(self, kind: Kind) -> Mapping[str, Any] | None:
        """The served schema of a child kind whose informer has synced; None otherwise."""
        if self.get(kind) is None:
            return None
        version = self.discovery.served(kind)
        return version.schema if version is not None else None

    def missing(self, desired: Iterable[Desired], *, autoscaled: bool) -> list[str]:
        """One line per kind the desired children need that the cluster does not serve (empty when all are)."""
        needed: list[Kind] = []
        for child in desired:
            if child.kind not in needed:
                needed.append(child.kind)
        if autoscaled and self.generation is None:
            needed.extend(kind for kind in autoscaling_kinds_missing(self.schema) if kind not in needed)
        return [
            f"the cluster does not serve {kind.kind} ({kind.api_version}, CRD {crd_name(kind)}); install that CRD, "
            f"ours (kubectl apply --server-side -f {CHILD_CRDS_DIRECTORY}/{kind.group}_{kind.plural}.yaml) "
            "or Kthena's own"
            for kind in needed
            if self.get(kind) is None
        ]

    # ---------------------------------------------------------------- internals
    def _on_crd_change(self, old: ServedCrd | None, new: ServedCrd | None) -> None:
        crd = new if new is not None else old
        if crd is None or not any((crd.group, crd.plural) == (kind.group, kind.plural) for kind in self.kinds):
            return
        if old is not None and new is not None and old.serving == new.serving and old.versions == new.versions:
            return  # a status or metadata change: nothing served changed
        self.fit.schemas_changed()
        self._changed()

    def _changed(self) -> None:
        self.generation = detect_generation(self.schema)
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
        for sink in self._sinks:
            sink.enqueue_all()
