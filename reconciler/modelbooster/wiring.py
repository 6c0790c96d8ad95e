"""The ModelBooster controller wired into the process (reconciler/peer.py): its informers and sources, its
controller and its gauges. The child kinds' informers run while CRD discovery says the cluster serves them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from reconciler.modelbooster.cache import booster_transform, child_transform
from reconciler.modelbooster.children import ChildInformers
from reconciler.modelbooster.controller import Known, ModelBoosterReconciler
from reconciler.modelbooster.kinds import CHILD_KINDS, MODEL_BOOSTER
from reconciler.modelbooster.lora import LoraUpdater, pod_owner_key, pod_owner_uid, setup_pod_informer
from reconciler.modelbooster.metrics import ModelBoosterMetrics
from reconciler.modelbooster.prune import MODEL_INDEX, UID_INDEX, model_index
from reconciler.modelbooster.settings import (
    NAME,
    DynamicSettings,
    ModelBoosterSettings,
    SettingsConfigMap,
    add_arguments,
    settings_from_args,
)
from reconciler.peer import Context, Peer
from reconciler.runtime.blockers import BlockerWatches
from reconciler.runtime.conditions import condition_status
from reconciler.runtime.controller import Controller, map_to_controller_owner
from reconciler.runtime.informer import Informer, label_index
from reconciler.runtime.kinds import CONFIG_MAP, NAMESPACE, Kind
from reconciler.runtime.namespaces import NamespaceLifecycle, namespace_transform
from reconciler.runtime.source import EventType, KeyMapper, ObjectKey, map_to_self
from shared.constants import (
    CONDITION_ACTIVE,
    CONDITION_FAILED,
    CONDITION_INITIALIZED,
    LABEL_MANAGED_BY,
    LABEL_MODEL_UID,
    MANAGED_BY_VALUE,
)

CONTROLLER_NAME: Final = NAME  # also its flags' prefix
CHILD_SELECTOR: Final = f"{LABEL_MANAGED_BY}={MANAGED_BY_VALUE}"


@dataclass(frozen=True)
class Registered:
    """What registering the ModelBooster controller made, for the process and tests to hold on to."""

    controller: Controller
    reconciler: ModelBoosterReconciler
    dynamic: DynamicSettings


def register(context: Context, settings: ModelBoosterSettings) -> Registered:
    manager, process = context.manager, context.settings
    metrics = ModelBoosterMetrics(manager.metrics)
    boosters = manager.informer(MODEL_BOOSTER, namespaces=process.namespaces, transform=booster_transform)
    children = _child_informers(context, metrics)
    namespaces = NamespaceLifecycle(_namespace_informers(context))
    blockers = BlockerWatches(manager.client, watch_timeout=manager.options.watch_timeout)
    manager.add_cleanup(blockers.close)
    pods = setup_pod_informer(manager, namespaces=process.namespaces)
    lora = LoraUpdater(pods=pods, recorder=context.recorder, timeout=settings.lora_timeout)
    manager.add_cleanup(lora.close)
    dynamic = DynamicSettings(settings.synthesis())
    reconciler = ModelBoosterReconciler(
        client=manager.client,
        boosters=boosters,
        children=children,
        recorder=context.recorder,
        settings=dynamic,
        field_manager=process.field_manager,
        metrics=metrics,
        lora=lora,
        namespaces=namespaces,
        blockers=blockers,
    )
    controller = Controller(
        name=CONTROLLER_NAME,
        reconcile=reconciler.reconcile,
        workers=settings.workers,
        rate_limiter=settings.rate_limiter(),
        metrics=manager.metrics,
    )
    controller.watch(boosters, map_to_self, primary=True)
    controller.watch(children, map_to_controller_owner(MODEL_BOOSTER))
    controller.watch(blockers)
    controller.watch(lora.pods, _pod_mapper(lora))
    if settings.config_map:
        config_map = manager.informer(
            CONFIG_MAP,
            namespaces=[process.controller_namespace],
            field_selector=f"metadata.name={settings.config_map}",
        )
        controller.watch(SettingsConfigMap(config_map, dynamic))
    manager.add_controller(controller)
    _add_gauges(context, reconciler)
    return Registered(controller, reconciler, dynamic)


def _child_informers(context: Context, metrics: ModelBoosterMetrics) -> ChildInformers:
    manager, process = context.manager, context.settings

    def child_informer(kind: Kind) -> Informer:
        return manager.new_informer(
            kind,
            namespaces=process.namespaces,
            label_selector=CHILD_SELECTOR,
            transform=child_transform(field_manager=process.field_manager),
            indexers={UID_INDEX: label_index(LABEL_MODEL_UID), MODEL_INDEX: model_index},
        )

    return ChildInformers(manager, context.discovery, make=child_informer, metrics=metrics, kinds=CHILD_KINDS)


def _namespace_informers(context: Context) -> list[Informer]:
    """Namespaces being deleted (runtime/namespaces.py): across the cluster, or each watched one by name."""
    manager, namespaces = context.manager, context.settings.namespaces
    if not namespaces:
        return [manager.informer(NAMESPACE, transform=namespace_transform)]
    return [
        manager.informer(NAMESPACE, field_selector=f"metadata.name={name}", transform=namespace_transform)
        for name in namespaces
    ]


def _add_gauges(context: Context, reconciler: ModelBoosterReconciler) -> None:
    metrics = context.manager.metrics
    metrics.add_condition_gauge(
        name="modelbooster_servings_older_rendering",
        documentation="ModelServings that keep an older rendering than this version renders (restarted by a "
        "rollout request or the next spec change), by namespace",
        counts=lambda: older_counts(reconciler.known),
        label="namespace",
    )
    metrics.add_condition_gauge(
        name="modelbooster_boosters",
        documentation="ModelBoosters per condition that is True",
        counts=lambda: condition_counts(reconciler.boosters),
    )


def _pod_mapper(lora: LoraUpdater) -> KeyMapper:
    """A running engine pod wakes its ModelBooster only when it may need runtime LoRA changes."""

    def mapper(event: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Iterable[ObjectKey]:
        if new is None or (new.get("status") or {}).get("phase") != "Running":
            return []
        if (old or {}).get("status") == new.get("status") or not lora.wants_pod_events(pod_owner_uid(new)):
            return []
        key = pod_owner_key(new)
        return [key] if key is not None else []

    return mapper


def condition_counts(boosters: Informer) -> dict[str, int]:
    """`modelbooster_boosters{condition}`: how many ModelBoosters have each condition True (from the cache)."""
    counts = {CONDITION_INITIALIZED: 0, CONDITION_ACTIVE: 0, CONDITION_FAILED: 0}
    for booster in boosters.objects():
        for condition in counts:
            if condition_status(booster.get("status"), condition) == "True":
                counts[condition] += 1
    return counts


def older_counts(known: dict[ObjectKey, Known]) -> dict[str, int]:
    """`modelbooster_servings_older_rendering{namespace}`, from what each ModelBooster's last reconcile found."""
    counts: dict[str, int] = {}
    for key, seen in known.items():
        counts[key.namespace] = counts.get(key.namespace, 0) + seen.older
    return counts


PEER: Final = Peer(
    name=CONTROLLER_NAME,
    default_settings=ModelBoosterSettings,
    add_arguments=add_arguments,
    settings_from_args=settings_from_args,
    register=register,
)
