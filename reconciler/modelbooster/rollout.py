"""Which rendering a ModelServing runs: rollouts only by intent (docs/design/reconciler.md §16).

Writing our current rendering whenever it differs from the live ModelServing would restart every inference pod
when the controller changes hands or versions; so each ModelServing is taken over, kept, rolled or held back,
decided here from its content (recorded by digest), with the texts that say so.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.modelbooster.scaled_fields import role_replica_paths
from reconciler.modelbooster.synthesis.labels import stamp_revision
from reconciler.runtime.apply import (
    REPLICAS_PATH,
    ChildOutcome,
    Desired,
    adoptable,
    is_subset,
    last_write_time,
    spec_written_since,
)
from reconciler.runtime.defaulting import with_defaults
from reconciler.runtime.foreign import readable
from reconciler.runtime.immutable import immutable_paths
from reconciler.runtime.informer import Informer
from reconciler.runtime.lean import full_object
from reconciler.runtime.objects import json_equal, metadata
from reconciler.runtime.paths import Path, get_path, without_paths
from reconciler.runtime.source import ObjectKey
from shared.backend_shape import backend_objects
from shared.constants import LABEL_BACKEND_NAME, LABEL_MANAGED_BY, LABEL_MODEL_NAME, LABEL_REVISION, MANAGED_BY_VALUE
from shared.rollout import ANNOTATION_ROLLOUT, ANNOTATION_TEMPLATE, ANNOTATION_TEMPLATE_INPUT, NOT_POD_SHAPING

DIGEST_LENGTH: Final = 16
# The spec fields of a ModelServing that shape no pod: its replica count is scaling, never a rollout.
NOT_HELD: Final = frozenset({"replicas"})


def pod_shaping(obj: Mapping[str, Any], *, scaled: Sequence[Path] = ()) -> dict[str, Any]:
    """The part of a ModelServing that its pods are made from: `spec` without `replicas`, and without the
    fields in `scaled` that someone else scales (a disaggregated backend's role replicas under the
    external-replicas opt-in: paths from the object's root, inside `spec`)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return {}
    inside = [path[1:] for path in scaled if len(path) > 2 and path[0] == "spec"]
    if inside:
        spec = without_paths(spec, inside)
    return {key: value for key, value in spec.items() if key not in NOT_HELD}


def scaled_paths(desired: Desired) -> tuple[Path, ...]:
    """The fields of `desired` below the top of `spec` that belong to a scaler once it exists (role replicas)."""
    return tuple(path for path in desired.foreign_after_create if len(path) > 2)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_LENGTH]


def template_digest(obj: Mapping[str, Any], *, scaled: Sequence[Path] = ()) -> str:
    """The digest of a ModelServing's pod-shaping spec (key order does not count, JSON values do)."""
    return _digest(pod_shaping(obj, scaled=scaled))


def rendering_input(
    booster: Mapping[str, Any], backend: str, *, runtime_adapters: Sequence[tuple[str, str]] | None = None
) -> str:
    """The digest of what a backend's ModelServing is rendered from: the backend as written in the stored
    ModelBooster (either shape; the fields that shape no pod left out) and the ModelBooster's rollout request.
    Defaults are not applied: a default that a new version adds is not a change the user made.

    A backend that loads LoRA adapters at run time (docs/design/reconciler.md §10) has its template rendered
    with the adapters the LoRA plan chose (`runtime_adapters`): those stand in for its `loraAdapters`, so that a
    change the running pods take over HTTP is no reason to roll them."""
    written = next((b for b in backend_objects(booster.get("spec")) if b.get("name") == backend), {})
    left_out = NOT_POD_SHAPING | ({"loraAdapters"} if runtime_adapters is not None else set())
    annotations = metadata(dict(booster)).get("annotations") or {}
    return _digest(
        {
            "backend": {key: value for key, value in written.items() if key not in left_out},
            "adapters": [list(adapter) for adapter in runtime_adapters] if runtime_adapters is not None else None,
            "rollout": annotations.get(ANNOTATION_ROLLOUT) if isinstance(annotations, dict) else None,
        }
    )


@dataclass(frozen=True)
class ImmutableConflict:
    """A field the served CRD declares immutable, which the current rendering would change."""

    path: Path
    live: Any
    desired: Any

    def describe(self, obj: Mapping[str, Any]) -> str:
        def text(value: Any) -> str:
            return json.dumps(value, sort_keys=True, separators=(",", ":"))

        return f"{readable(self.path, obj)} is {text(self.live)}, the ModelBooster now renders {text(self.desired)}"


@dataclass(frozen=True)
class Rendering:
    """What to do with one ModelServing."""

    desired: Desired  # what the child is to match (the current rendering, or the live pod-shaping spec kept)
    older: bool  # the child keeps a pod-shaping spec that is not the current rendering
    written: str | None = None  # the template digest recorded by the write of the current rendering
    conflicts: tuple[ImmutableConflict, ...] = ()


def immutable_conflicts(desired: Desired, live: Mapping[str, Any], paths: Sequence[Path]) -> list[ImmutableConflict]:
    """The immutable fields the live object holds with another value than the desired one (a field not set yet
    may be set: transition rules judge only values present before and after)."""
    conflicts = []
    for path in paths:
        have, want = get_path(live, path), get_path(desired.obj, path)
        if have is not None and not json_equal(have, want):
            conflicts.append(ImmutableConflict(path, have, want))
    return conflicts


def _annotated(desired: Desired, obj: dict[str, Any], *, template: str, source: str) -> Desired:
    meta = dict(obj["metadata"])
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        ANNOTATION_TEMPLATE: template,
        ANNOTATION_TEMPLATE_INPUT: source,
    }
    return Desired(
        kind=desired.kind,
        obj={**obj, "metadata": meta},
        foreign_after_create=desired.foreign_after_create,
        immutable=desired.immutable,
    )


def _keeping(
    desired: Desired, live: Mapping[str, Any], *, current: bool, template: str, source: str, restore_roles: bool = False
) -> Desired:
    """The desired ModelServing with the live pod-shaping spec in place of the rendered one. Its revision label
    names what it holds: the rendered one's when the live spec is the current rendering (with the server's
    defaults), else the one the live object carries (what it was written with), else one of its own."""
    # Shallow: nothing downstream changes a desired object in place, and `live` is the caller's own copy.
    spec = pod_shaping(live)
    rendered = desired.obj.get("spec") or {}
    for key in NOT_HELD:
        if key in rendered:
            spec[key] = rendered[key]
    if restore_roles and _rendered_role_replicas(spec, rendered):
        # The roles' replicas were a scaler's until the opt-in went: they are scaling, not pod shape (Kthena's
        # role hash leaves them out), so they go back to the rendering, and the digest recorded is what is written.
        template = template_digest({"spec": spec})
    meta = {**desired.obj["metadata"], "labels": dict(desired.obj["metadata"].get("labels") or {})}
    obj = {**desired.obj, "metadata": meta, "spec": spec}
    if not current:
        kept = (metadata(dict(live)).get("labels") or {}).get(LABEL_REVISION)
        if isinstance(kept, str) and kept:
            meta["labels"][LABEL_REVISION] = kept
        else:
            ignored = ("replicas",) if REPLICAS_PATH in desired.foreign_after_create else ()
            stamp_revision(obj, ignored_spec_fields=ignored)
    return _annotated(desired, obj, template=template, source=source)


def _rendered_role_replicas(spec: dict[str, Any], rendered: Mapping[str, Any]) -> bool:
    """Give the roles of `spec` (kept from the live object) the replicas `rendered` gives the role of that name;
    whether any changed. Copies what it changes: `spec` shares its lists with the live object."""
    template = spec.get("template")
    want = {role.get("name"): role.get("replicas") for role in _roles(rendered.get("template"))}
    roles = _roles(template)
    if not any(role.get("name") in want and role.get("replicas") != want[role.get("name")] for role in roles):
        return False
    assert isinstance(template, dict)
    spec["template"] = {**template, "roles": [
        {**role, "replicas": want[role.get("name")]} if isinstance(role, dict) and role.get("name") in want
        else role
        for role in template["roles"]
    ]}  # fmt: skip
    return True


def _with_rendered_roles(desired: Desired, live: dict[str, Any]) -> dict[str, Any]:
    """`live` as the write of a kept spec leaves it when its roles' replicas are restored."""
    spec = live.get("spec")
    if not isinstance(spec, dict):
        return live
    spec = dict(spec)
    return {**live, "spec": spec} if _rendered_role_replicas(spec, desired.obj.get("spec") or {}) else live


def _roles(template: Any) -> list[dict[str, Any]]:
    roles = template.get("roles") if isinstance(template, dict) else None
    return [role for role in roles if isinstance(role, dict)] if isinstance(roles, list) else []


def stored_digest(desired: Desired, schema: Mapping[str, Any] | None) -> str:
    """The template digest of `desired` as the API server will store it: with the served CRD's defaults."""
    return template_digest(with_defaults({"spec": desired.obj.get("spec") or {}}, schema), scaled=scaled_paths(desired))


class Memo:
    """What a live ModelServing's content gives, by its uid and resourceVersion (the content of one version never
    changes): its template digest, and whether it is the current rendering of a desired object (named by the
    desired object's revision label and the served schema's identity). Every reconcile asks both of every
    ModelServing; bounded, the oldest forgotten first (which costs one more computation each)."""

    def __init__(self, size: int = 16_384) -> None:
        self._size = size
        self._digests: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._current: OrderedDict[tuple[Any, ...], bool] = OrderedDict()

    def digest(self, live: Mapping[str, Any], *, scaled: Sequence[Path] = ()) -> str:
        version = _version(live)
        if version is None:
            return template_digest(live, scaled=scaled)
        key = (*version, tuple(scaled))
        found = self._digests.get(key)
        if found is None:
            found = self._digests[key] = template_digest(live, scaled=scaled)
            _bound(self._digests, self._size)
        return found

    def current(self, desired: Desired, live: Mapping[str, Any], schema: object) -> bool:
        """Whether `live` already carries the pod-shaping spec `desired` renders (server defaults aside)."""
        version = _version(live)
        revision = str((metadata(desired.obj).get("labels") or {}).get(LABEL_REVISION) or "")
        scaled = scaled_paths(desired)
        if version is None or not revision:
            return is_subset(pod_shaping(desired.obj, scaled=scaled), pod_shaping(live, scaled=scaled))
        key = (*version, revision, id(schema), scaled)
        found = self._current.get(key)
        if found is None:
            found = self._current[key] = is_subset(
                pod_shaping(desired.obj, scaled=scaled), pod_shaping(live, scaled=scaled)
            )
            _bound(self._current, self._size)
        return found


def _version(live: Mapping[str, Any]) -> tuple[str, str] | None:
    meta = metadata(dict(live))
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    return (uid, version) if isinstance(uid, str) and uid and isinstance(version, str) and version else None


def _bound(memo: OrderedDict[Any, Any], size: int) -> None:
    while len(memo) > size:
        memo.popitem(last=False)


def decide(
    desired: Desired,
    live: dict[str, Any] | None,
    *,
    source: str,
    schema: Mapping[str, Any] | None,
    immutable: Sequence[Path],
    manager: str,
    memo: Memo | None = None,
) -> Rendering:
    """Take over, keep, roll or hold back one ModelServing (see the module docstring). `source` is the digest of
    its rendering input (`rendering_input`), `schema` the served CRD's schema and `immutable` the paths it
    declares immutable; `memo` spares recomputing what an unchanged live object gives."""
    if live is None:
        return _writing(desired, source=source, schema=schema)
    memo = memo or Memo(size=0)
    whole = full_object(live)
    annotations = metadata(whole).get("annotations") or {}
    recorded, recorded_source = annotations.get(ANNOTATION_TEMPLATE), annotations.get(ANNOTATION_TEMPLATE_INPUT)
    seen = memo.digest(whole, scaled=scaled_paths(desired))
    # Recorded while the roles' replicas were a scaler's (the external-replicas opt-in), which is gone: the held
    # part is what was recorded but for those counts, which go back to the rendering (reconciler.md §7).
    withdrawn = (
        recorded is not None
        and recorded != seen
        and not scaled_paths(desired)
        and recorded == memo.digest(whole, scaled=role_replica_paths(desired.obj))
    )
    current = memo.current(desired, _with_rendered_roles(desired, whole) if withdrawn else whole, schema)
    if withdrawn and (recorded_source == source or current):
        kept = _keeping(desired, whole, current=current, template=seen, source=source, restore_roles=True)
        return Rendering(kept, older=not current)
    if recorded is None or (recorded != seen and not withdrawn and _reshaped(whole, manager=manager)):
        return Rendering(_keeping(desired, whole, current=current, template=seen, source=source), older=not current)
    if recorded == seen and (recorded_source == source or current):
        return Rendering(_keeping(desired, whole, current=current, template=seen, source=source), older=not current)
    conflicts = immutable_conflicts(desired, whole, immutable)
    if conflicts:
        kept = _keeping(desired, whole, current=False, template=str(recorded), source=str(recorded_source or ""))
        return Rendering(kept, older=True, conflicts=tuple(conflicts))
    return _writing(desired, source=source, schema=schema)


def _writing(desired: Desired, *, source: str, schema: Mapping[str, Any] | None) -> Rendering:
    """Write the current rendering, recording the digest of what the server will store."""
    digest = stored_digest(desired, schema)
    return Rendering(_annotated(desired, desired.obj, template=digest, source=source), older=False, written=digest)


def _reshaped(live: Mapping[str, Any], *, manager: str) -> bool:
    """Whether a pod-shaping spec that is not the recorded one changed without anyone writing it since our last
    write: the API server reshaped what it stores (a CRD's new defaults or pruning, applied on read)."""
    ours = last_write_time(dict(live), manager=manager)
    return bool(ours) and not spec_written_since(dict(live), manager=manager, since=ours, ignore=NOT_HELD)


@dataclass(frozen=True)
class Decisions:
    """The decisions of one reconcile, by ModelServing name (in the order of the desired children), and what
    they tell the status and the Events."""

    renderings: dict[str, Rendering]
    taken_over: tuple[str, ...] = ()  # the children taken over as they run
    held_back: tuple[str, ...] = ()  # one message per ModelServing held back

    @property
    def older(self) -> tuple[str, ...]:
        return tuple(name for name, rendering in self.renderings.items() if rendering.older)

    def applied_to(self, desired: Sequence[Desired]) -> list[Desired]:
        """`desired` with each decided ModelServing as it is to be written."""
        return [
            self.renderings[child.name].desired
            if child.kind == MODEL_SERVING and child.name in self.renderings
            else child
            for child in desired
        ]


class ImmutablePaths:
    """The fields the served ModelServing CRD declares immutable: one walk per served schema."""

    def __init__(self) -> None:
        self._memo: tuple[Any, tuple[Path, ...]] | None = None

    def __call__(self, schema: Any) -> tuple[Path, ...]:
        if self._memo is None or self._memo[0] is not schema:
            self._memo = (schema, immutable_paths(schema))
        return self._memo[1]


def decide_all(
    booster: Mapping[str, Any],
    desired: Sequence[Desired],
    *,
    servings: Informer | None,
    schema: Mapping[str, Any] | None,
    immutable: Sequence[Path],
    templates: Mapping[str, Sequence[tuple[str, str]]],
    manager: str,
    memo: Memo,
) -> Decisions:
    """Per ModelServing of ours (or ours to adopt): take it over, keep it, roll it or hold it back. `templates`:
    the LoRA adapters each runtime-LoRA backend's template carries (lora.py)."""
    if servings is None:
        return Decisions({})
    meta = metadata(dict(booster))
    uid = str(meta.get("uid"))
    selector = {LABEL_MANAGED_BY: MANAGED_BY_VALUE, LABEL_MODEL_NAME: str(meta.get("name"))}
    renderings: dict[str, Rendering] = {}
    taken_over: list[str] = []
    held_back: list[str] = []
    for child in desired:
        if child.kind != MODEL_SERVING:
            continue
        live = servings.get(child.namespace, child.name)
        if live is not None and not adoptable(live, owner_uid=uid, selector=selector):
            continue  # not ours: refused when written (docs/design/reconciler.md §4)
        backend = str((metadata(child.obj).get("labels") or {}).get(LABEL_BACKEND_NAME) or "")
        adapters = templates.get(backend)
        source = rendering_input(booster, backend, runtime_adapters=tuple(adapters) if adapters is not None else None)
        rendering = decide(child, live, source=source, schema=schema, immutable=immutable, manager=manager, memo=memo)
        renderings[child.name] = rendering
        if live is not None and not (metadata(full_object(live)).get("annotations") or {}).get(ANNOTATION_TEMPLATE):
            taken_over.append(child.ref())
        if rendering.conflicts:
            held_back.append(held_back_message(child, rendering.conflicts))
    return Decisions(renderings, tuple(taken_over), tuple(held_back))


def held_back_message(child: Desired, conflicts: Sequence[ImmutableConflict]) -> str:
    fields = "; ".join(conflict.describe(child.obj) for conflict in conflicts)
    return (
        f"{child.ref()} is kept as it runs: the change would alter what its served CRD "
        f"{MODEL_SERVING.plural}.{MODEL_SERVING.group} declares immutable ({fields}), which the API "
        "server refuses to update. To apply it, delete the ModelServing, which restarts its pods, and "
        f"it is created anew (`kubectl delete {MODEL_SERVING.plural}.{MODEL_SERVING.group} -n "
        f"{child.namespace} {child.name}`); or change the ModelBooster back"
    )


def rollout_hint(key: ObjectKey) -> str:
    """How a user asks for the current rendering of one ModelBooster."""
    return (
        f"`modelbooster rollout {key.name} -n {key.namespace}` (or `kubectl annotate modelbooster {key.name} -n "
        f'{key.namespace} {ANNOTATION_ROLLOUT}="$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite`)'
    )


@dataclass(frozen=True)
class TemplateRecord:
    """One correction of a ModelServing's recorded template digest (`digest_corrections`)."""

    child: Desired
    stored: dict[str, Any]  # the object our write returned
    digest: str  # the digest of its pod-shaping spec: what the server stored for us

    def patch(self, resource_version: Any) -> dict[str, Any]:
        """The annotation, on condition that the object is still at `resource_version` (a merge patch carrying
        a resourceVersion is refused with a conflict otherwise)."""
        return {"metadata": {"resourceVersion": resource_version, "annotations": {ANNOTATION_TEMPLATE: self.digest}}}

    def still_ours(self, fresh: Mapping[str, Any]) -> bool:
        """Whether `fresh` is the same object with the pod-shaping spec our write stored."""
        same = metadata(dict(fresh)).get("uid") == metadata(self.stored).get("uid")
        return same and template_digest(fresh, scaled=scaled_paths(self.child)) == self.digest


def digest_corrections(decisions: Decisions, outcomes: Mapping[str, ChildOutcome]) -> list[TemplateRecord]:
    """Where the server stored something else than the digest a write of the current rendering recorded (a
    mutating webhook): what to record instead. `outcomes`: by ModelServing name, what applying it did.

    Judged from the object our own write returned, never from the cache: by now the cache may hold someone's
    edit made just after our write, and recording its digest would make their edit ours, kept for good."""
    corrections = []
    for name, rendering in decisions.renderings.items():
        outcome = outcomes.get(name)
        if rendering.written is None or outcome is None or outcome.stored is None:
            continue  # nothing written, nothing recorded to correct
        stored = outcome.stored
        actual = template_digest(stored, scaled=scaled_paths(rendering.desired))
        if (metadata(stored).get("annotations") or {}).get(ANNOTATION_TEMPLATE) != actual:
            corrections.append(TemplateRecord(rendering.desired, stored, actual))
    return corrections
