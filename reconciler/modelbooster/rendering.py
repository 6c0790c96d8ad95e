"""A ModelBooster turned into the children it wants: defaulted and validated like admission does, synthesized
(synthesis/, pure) and fitted to the schemas the cluster serves (docs/design/reconciler.md §2, §14)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.modelbooster.kinds import IMMUTABLE_FIELDS, MODEL_SERVING, child_kind_of
from reconciler.modelbooster.scaled_fields import role_replica_paths
from reconciler.modelbooster.synthesis import (
    SynthesisError,
    SynthesisSettings,
    autoscaled_backends,
    role_scaled_backends,
    synthesize,
)
from reconciler.runtime.apply import REPLICAS_PATH, Desired
from reconciler.runtime.objects import metadata
from reconciler.runtime.paths import Path
from reconciler.runtime.schema_fit import SchemaFit
from shared.api.modelbooster import LoraAdapter, ModelBooster
from shared.autoscaling_generations import Generation
from shared.constants import LABEL_BACKEND_NAME
from shared.decoding import without_status
from shared.errors import ValidationFailed
from shared.naming import backend_resource_name
from shared.remedy import how_to_fix
from shared.validation import parse_modelbooster


@dataclass(frozen=True)
class Invalid:
    """The ModelBooster cannot be turned into children as written: what a user should read."""

    message: str


def parse(booster: dict[str, Any]) -> ModelBooster | Invalid:
    """Default and validate like admission does: the webhook's denial, then what to do about it. Nothing is
    carried over here, unlike on an admitted UPDATE: an object still holding a field we do not support is not
    synthesized."""
    try:
        return parse_modelbooster(without_status(booster))
    except ValidationFailed as error:
        meta = metadata(booster)
        remedy = how_to_fix(error.errors, namespace=str(meta.get("namespace") or ""), name=str(meta.get("name")))
        return Invalid(f"{error}\n{remedy}")


def render(typed: ModelBooster, settings: SynthesisSettings, *, generation: Generation) -> list[Desired] | Invalid:
    """The children as synthesized, each with the fields another writer owns once it exists (the autoscaler's
    replicas, the role replicas under the external-replicas opt-in) and the fields its CRD makes immutable."""
    try:
        objects = synthesize(typed, settings, generation=generation)
    except SynthesisError as error:
        return Invalid(str(error))
    autoscaled = autoscaled_backends(typed)
    roles_scaled = role_scaled_backends(typed)
    desired: list[Desired] = []
    for obj in objects:
        kind = child_kind_of(obj)
        if kind is None:
            return Invalid(f"synthesis produced an object of unknown kind {obj.get('kind')!r}")
        foreign: tuple[Path, ...] = ()
        backend = (metadata(obj).get("labels") or {}).get(LABEL_BACKEND_NAME)
        if kind == MODEL_SERVING and backend in autoscaled:
            foreign = (REPLICAS_PATH,)
        if kind == MODEL_SERVING and backend in roles_scaled:
            foreign += role_replica_paths(obj)
        desired.append(
            Desired(kind=kind, obj=obj, foreign_after_create=foreign, immutable=IMMUTABLE_FIELDS.get(kind, ()))
        )
    return desired


def render_with_adapters(
    typed: ModelBooster,
    adapters: Mapping[str, Sequence[tuple[str, str]]],
    settings: SynthesisSettings,
    *,
    generation: Generation,
    fit: SchemaFit,
) -> dict[str, Desired]:
    """By backend: its ModelServing rendered with other LoRA adapters (name, artifact URL) than the spec's, as
    written to this cluster (fitted). Empty when that rendering fails: the current one is then rolled out."""
    if not adapters:
        return {}
    other = typed.model_copy(deep=True)
    for backend in other.spec.backends:
        if backend.name in adapters:
            backend.lora_adapters = [LoraAdapter(name=name, artifact_url=url) for name, url in adapters[backend.name]]
            backend.lora_adapters = backend.lora_adapters or None
    rendered = render(other, settings, generation=generation)
    if isinstance(rendered, Invalid):
        return {}
    model = str(typed.metadata.name)
    names = {backend_resource_name(model, backend): backend for backend in adapters}
    servings = [child for child in rendered if child.kind == MODEL_SERVING and child.name in names]
    fitted, _ = fit.fit(str(typed.metadata.uid or ""), servings)
    return {names[child.name]: child for child in fitted}
