"""The reconciler process assembled: client, manager, ModelBooster controller, settings ConfigMap, probes.

`build(settings, client)` wires everything without starting it (tests start it against the fake API server);
`serve(settings, stop=...)` connects to the cluster, serves the probes and metrics, and runs until `stop`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from process.build import register_build_info
from reconciler.modelbooster.controller import ModelBoosterReconciler, setup_modelbooster_controller
from reconciler.modelbooster.lora import LoraUpdater, setup_pod_informer
from reconciler.modelbooster.settings import DynamicSettings, ReconcilerSettings
from reconciler.runtime.client import KubeClient
from reconciler.runtime.controller import Controller
from reconciler.runtime.discovery import CrdDiscovery
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.health import make_app
from reconciler.runtime.kinds import CONFIG_MAP
from reconciler.runtime.manager import Manager, ManagerOptions
from reconciler.runtime.metrics import Metrics
from shared.api.inferno import GROUP as INFERNO_GROUP
from shared.constants import NETWORKING_GROUP, WORKLOAD_GROUP

logger = logging.getLogger(__name__)

# The API groups of the CRDs we ship: their CRDs are held whole (schemas, annotations) by `CrdDiscovery`.
OUR_GROUPS = frozenset({WORKLOAD_GROUP, NETWORKING_GROUP, INFERNO_GROUP})


@dataclass
class ReconcilerProcess:
    settings: ReconcilerSettings
    manager: Manager
    controller: Controller
    reconciler: ModelBoosterReconciler
    dynamic: DynamicSettings
    # The CRDs the cluster serves (one watch); CRDs of our groups are held whole. Any duty may subscribe.
    served: CrdDiscovery


def build(settings: ReconcilerSettings, client: KubeClient, metrics: Metrics) -> ReconcilerProcess:
    manager = Manager(
        client,
        options=ManagerOptions(
            leader_elect=settings.leader_elect,
            lease_name=settings.lease_name,
            lease_namespace=settings.effective_lease_namespace,
            identity=settings.identity,
            lease=settings.lease,
            resync_period=settings.resync_period,
            shutdown_timeout=settings.shutdown_timeout,
            watch_timeout=settings.watch_timeout,
            watch_read_timeout=settings.watch_read_timeout,
        ),
        metrics=metrics,
    )
    register_build_info(metrics.registry, component="reconciler")
    dynamic = DynamicSettings(settings.synthesis())
    served = CrdDiscovery(manager, groups=OUR_GROUPS)
    recorder = EventRecorder(client, instance=settings.identity, metrics=metrics)
    pods = setup_pod_informer(manager, namespaces=settings.namespaces)
    lora = LoraUpdater(pods=pods, recorder=recorder, timeout=settings.lora_timeout)
    manager.add_cleanup(lora.close)
    controller, reconciler = setup_modelbooster_controller(
        manager,
        namespaces=settings.namespaces,
        settings=dynamic,
        recorder=recorder,
        served=served,
        lora=lora,
        workers=settings.workers,
        field_manager=settings.field_manager,
        backoff_base=settings.backoff_base,
        backoff_max=settings.backoff_max,
        retry_qps=settings.retry_qps,
        retry_burst=settings.retry_burst,
    )
    if settings.config_map:
        _watch_settings_config_map(manager, settings, dynamic, controller)
    return ReconcilerProcess(settings, manager, controller, reconciler, dynamic, served)


def _watch_settings_config_map(
    manager: Manager, settings: ReconcilerSettings, dynamic: DynamicSettings, controller: Controller
) -> None:
    informer = manager.informer(
        CONFIG_MAP,
        namespaces=[settings.controller_namespace],
        field_selector=f"metadata.name={settings.config_map}",
    )

    def on_change(event: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        data = (new or {}).get("data") if event != "DELETED" else None
        if dynamic.update(data if isinstance(data, dict) else None):
            # New images or env: every ModelBooster re-renders; only children whose content changed are written.
            controller.enqueue_all()

    informer.add_handler(on_change)
    controller.depends_on(informer)  # never render children with the start-up images when the map says otherwise


# Registers another duty (a controller, a leader task) on the assembled process before it starts.
Duty = Callable[[ReconcilerProcess, KubeClient], None]


async def serve(
    settings: ReconcilerSettings,
    *,
    stop: asyncio.Event,
    client: KubeClient | None = None,
    duties: Sequence[Duty] = (),
) -> None:
    """Connect, assemble, register `duties`, serve the probes and metrics, and run until `stop` is set."""
    metrics = Metrics()
    if client is None:
        client = await KubeClient.connect(
            kubeconfig=settings.kubeconfig,
            qps=settings.qps,
            burst=settings.burst,
            user_agent=f"modelbooster-reconciler ({settings.identity})",
            metrics=metrics,
        )
    runner: web.AppRunner | None = None
    try:
        process = build(settings, client, metrics)
        for duty in duties:
            duty(process, client)
        if settings.metrics_port:
            runner = web.AppRunner(make_app(process.manager), handle_signals=False, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, settings.metrics_host, settings.metrics_port).start()
            logger.info("serving /metrics, /healthz, /readyz on port %d", settings.metrics_port)
        await process.manager.run(stop)
    finally:
        if runner is not None:
            await runner.cleanup()
        await client.close()
