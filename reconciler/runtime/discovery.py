"""What the cluster serves of custom resources, learnt from one list+watch of CustomResourceDefinitions.

Why a CRD watch (and not discovery polling or re-discovery on 404): a CRD object says everything discovery
says about a custom resource (group, versions served, kind, plural, scope, subresources) and more that
discovery does not (each version's schema, the CRD's annotations, whether it is Established or being deleted),
and its watch reports a change within a round trip, so a kind that appears or disappears is acted on at once,
with no polling period and no 404 to provoke first. It costs one watch and RBAC `get/list/watch` on
`customresourcedefinitions.apiextensions.k8s.io`. Built-in kinds are always served and are not asked about here.

A custom resource is *served* at a version when its CRD is Established, not being deleted, and that version has
`served: true` — as kube-apiserver decides what discovery lists and what answers 404 (tests/fakeapi pins the
same rule).

Consumers (any number, one watch): read `crds()`, `crd(group, plural)` or `served(kind)`; `subscribe(handler)`
to hear `handler(old, new)` after every change of one CRD (`old` None when it appeared, `new` None when it is
gone). Handlers run synchronously on the event loop and must be cheap. During the initial list every CRD arrives
as an appearance; `wait_synced()` / `has_synced` tell when the first list is complete.

Memory: a cluster may hold hundreds of CRDs of megabytes each (Crossplane providers). Only the CRDs of the
`groups` given are kept whole; of the others, only their identity (name, group, plural, kind). The list that
fills the cache is read in pages of `CRD_PAGE_SIZE` and each page's CRDs are decoded one at a time, each
reduced before the next is decoded (`stream_pages`), so a page is never held whole in decoded form: with 200
CRDs of 1 MiB the first list peaked 453 MiB over an idle process in pages of 100 decoded whole, and peaks 27 MiB
(`bench/crd_informer_bench.py`).
This module knows no API of ours: callers say which groups and kinds matter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from reconciler.runtime.informer import Informer
from reconciler.runtime.kinds import Kind
from reconciler.runtime.manager import Manager
from reconciler.runtime.objects import meta_text, without_managed_fields
from reconciler.runtime.source import EventType

logger = logging.getLogger(__name__)

CRD: Final = Kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)
# A CRD may be as large as etcd takes (1.5 MiB): 8 keep a page's text around 12 MiB at worst; a cluster's few
# hundred CRDs still list in a few dozen requests.
CRD_PAGE_SIZE: Final = 8


@dataclass(frozen=True)
class ServedVersion:
    """One version of a custom resource the API server serves."""

    name: str
    schema: Mapping[str, Any] | None  # the version's openAPIV3Schema (None for a CRD of a group not kept whole)
    subresources: frozenset[str]  # "status", "scale"
    storage: bool


@dataclass(frozen=True)
class ServedCrd:
    """A CustomResourceDefinition as the API server holds it, reduced to what consumers read."""

    name: str
    group: str
    kind: str
    plural: str
    namespaced: bool
    established: bool
    terminating: bool
    versions: Mapping[str, ServedVersion]  # versions with `served: true`, by name
    annotations: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""
    generation: int = 0
    # The CRD as read (managedFields dropped), for consumers that compare it whole; {} for groups not kept whole.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def serving(self) -> bool:
        """Whether requests for its resources are answered at all (Established, not being deleted)."""
        return self.established and not self.terminating

    def version(self, name: str) -> ServedVersion | None:
        """The version `name` if the API server answers requests for it now, else None."""
        return self.versions.get(name) if self.serving else None


ChangeHandler = Callable[[ServedCrd | None, ServedCrd | None], None]


def _condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def served_crd(obj: Mapping[str, Any]) -> ServedCrd | None:
    """A CRD object as `ServedCrd`; None for something that is not one (hostile or truncated input)."""
    meta = obj.get("metadata")
    spec = obj.get("spec")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return None
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    versions: dict[str, ServedVersion] = {}
    for version in spec.get("versions") or ():
        if not isinstance(version, dict) or version.get("served") is False:
            continue
        if not isinstance(version.get("name"), str):
            continue
        holder = version.get("schema")
        schema = holder.get("openAPIV3Schema") if isinstance(holder, dict) else None
        subresources = version.get("subresources") if isinstance(version.get("subresources"), dict) else {}
        assert isinstance(subresources, dict)
        versions[version["name"]] = ServedVersion(
            name=version["name"],
            schema=schema if isinstance(schema, dict) else None,
            subresources=frozenset(str(key) for key in subresources),
            storage=bool(version.get("storage")),
        )
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    generation = meta.get("generation")
    return ServedCrd(
        name=str(meta.get("name") or ""),
        group=str(spec.get("group") or ""),
        kind=str(names.get("kind") or ""),
        plural=str(names.get("plural") or ""),
        namespaced=spec.get("scope") != "Cluster",
        established=_condition_true(obj, "Established"),
        terminating=bool(meta.get("deletionTimestamp")),
        versions=versions,
        annotations={str(k): str(v) for k, v in (annotations or {}).items()},
        resource_version=str(meta.get("resourceVersion") or ""),
        generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
        raw=obj,
    )


def _transform(groups: frozenset[str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        assert isinstance(meta, dict)
        assert isinstance(spec, dict)
        if spec.get("group") in groups:
            return without_managed_fields(obj)
        # Identity only: enough to say it exists, nothing of its (possibly huge) schema.
        return {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": {k: meta.get(k) for k in ("name", "uid", "resourceVersion", "deletionTimestamp")},
            "spec": {"group": spec.get("group"), "names": spec.get("names"), "scope": spec.get("scope")},
        }

    return transform


class CrdDiscovery:
    """The CRDs the cluster holds, from one informer registered with the manager (module docstring)."""

    def __init__(self, manager: Manager, *, groups: Collection[str]) -> None:
        self.groups = frozenset(groups)
        self.informer: Informer = manager.informer(
            CRD, transform=_transform(self.groups), page_size=CRD_PAGE_SIZE, stream_pages=True
        )
        self._crds: dict[str, ServedCrd] = {}
        self._handlers: list[ChangeHandler] = []
        self._synced_callbacks: list[Callable[[], None]] = []
        self._followed: set[Kind] = set()
        self.informer.add_handler(self._on_event)
        manager.add_background(self._announce_synced)

    # ---------------------------------------------------------------- reading
    @property
    def has_synced(self) -> bool:
        return self.informer.has_synced

    async def wait_synced(self) -> None:
        await self.informer.wait_synced()

    def crds(self) -> Mapping[str, ServedCrd]:
        """Every CRD the cluster holds, by name (`<plural>.<group>`)."""
        return dict(self._crds)

    def crd(self, group: str, plural: str) -> ServedCrd | None:
        return self._crds.get(f"{plural}.{group}")

    def served(self, kind: Kind) -> ServedVersion | None:
        """The served version of a custom `kind` (its group, plural and version), or None if requests for it
        would answer 404 now."""
        crd = self.crd(kind.group, kind.plural)
        return crd.version(kind.version) if crd is not None else None

    def on_synced(self, callback: Callable[[], None]) -> None:
        """Call `callback()` once, when the first list of CRDs is complete."""
        self._synced_callbacks.append(callback)

    async def _announce_synced(self) -> None:
        await self.informer.wait_synced()
        for callback in self._synced_callbacks:
            try:
                callback()
            except Exception:
                logger.exception("served resources: synced callback failed")

    def follow(self, kinds: Collection[Kind]) -> None:
        """Note `kinds` as watched while their CRD is served, so that they count as in use when not served."""
        self._followed.update(kinds)

    @property
    def followed(self) -> frozenset[Kind]:
        return frozenset(self._followed)

    def subscribe(self, handler: ChangeHandler) -> None:
        """Call `handler(old, new)` after each change of a CRD (see module docstring)."""
        self._handlers.append(handler)

    # ---------------------------------------------------------------- events
    def _on_event(self, event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        source = old if new is None else new
        name = meta_text(source, "name")
        before = self._crds.get(name)
        after = served_crd(new) if new is not None and event != "DELETED" else None
        if after is None:
            self._crds.pop(name, None)
        else:
            self._crds[name] = after
        if before == after:
            return
        if after is None or before is None or before.serving != after.serving:
            state = "gone" if after is None else ("served" if after.serving else "not served")
            logger.info("CustomResourceDefinition %s: %s", name, state)
        self._notify(before, after)

    def _notify(self, old: ServedCrd | None, new: ServedCrd | None) -> None:
        for handler in self._handlers:
            try:
                handler(old, new)
            except Exception:
                logger.exception("served resources: change handler failed")
