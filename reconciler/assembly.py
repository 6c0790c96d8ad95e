"""The reconciler process assembled: client, manager, CRD discovery, Event recorder, probes, and every
controller package registered the same way (reconciler/peer.py).

`build(settings, client, metrics, peers=...)` wires everything without starting it (tests start it against the
fake API server, with the ModelBooster controller alone by default); `serve(settings, stop=...)` connects to
the cluster, registers every controller, serves the probes and metrics, and runs until `stop`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from process.build import register_build_info, version
from reconciler.api.kinds import OUR_GROUPS
from reconciler.certduty.controller import PEER as CERTDUTY
from reconciler.certduty.settings import CertDutySettings
from reconciler.crdcheck.controller import PEER as CRDCHECK
from reconciler.crdcheck.settings import CrdCheckSettings
from reconciler.inferno.settings import InfernoSettings
from reconciler.inferno.wiring import PEER as INFERNO
from reconciler.modelbooster.controller import PEER as MODELBOOSTER
from reconciler.modelbooster.controller import ModelBoosterReconciler, Registered
from reconciler.modelbooster.settings import ModelBoosterSettings
from reconciler.peer import Context, Peer
from reconciler.runtime.client import KubeClient
from reconciler.runtime.controller import Controller
from reconciler.runtime.discovery import CrdDiscovery
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.health import make_app
from reconciler.runtime.manager import Manager
from reconciler.runtime.metrics import Metrics
from reconciler.settings import ProcessSettings

logger = logging.getLogger(__name__)

# Every controller of the process, in the order they register (the CRD check last: it judges what the others use).
PEERS: tuple[Peer[Any], ...] = (MODELBOOSTER, CERTDUTY, INFERNO, CRDCHECK)


@dataclass(frozen=True)
class ReconcilerSettings:
    """The whole process's settings: its own (the manager's) and each controller's."""

    process: ProcessSettings = field(default_factory=ProcessSettings)
    modelbooster: ModelBoosterSettings = field(default_factory=ModelBoosterSettings)
    certduty: CertDutySettings = field(default_factory=CertDutySettings)
    inferno: InfernoSettings = field(default_factory=InfernoSettings)
    crdcheck: CrdCheckSettings = field(default_factory=CrdCheckSettings)

    def of(self, peer: Peer[Any]) -> Any:
        return getattr(self, peer.name)


@dataclass
class ReconcilerProcess:
    settings: ReconcilerSettings
    manager: Manager
    context: Context
    # What each registered controller's `register` returned, by controller name.
    registered: dict[str, Any]

    @property
    def modelbooster(self) -> Registered:
        registered: Registered = self.registered[MODELBOOSTER.name]
        return registered

    @property
    def controller(self) -> Controller:
        return self.modelbooster.controller

    @property
    def reconciler(self) -> ModelBoosterReconciler:
        return self.modelbooster.reconciler

    @property
    def discovery(self) -> CrdDiscovery:
        return self.context.discovery


def build(
    settings: ReconcilerSettings,
    client: KubeClient,
    metrics: Metrics,
    *,
    peers: Sequence[Peer[Any]] = (MODELBOOSTER,),
) -> ReconcilerProcess:
    process = settings.process
    manager = Manager(client, options=process.manager_options(), metrics=metrics)
    register_build_info(metrics.registry, component="reconciler")
    context = Context(
        manager=manager,
        client=client,
        settings=process,
        discovery=CrdDiscovery(manager, groups=OUR_GROUPS),
        recorder=EventRecorder(client, instance=process.identity, metrics=metrics),
        version=version(),
    )
    registered = {peer.name: peer.register(context, settings.of(peer)) for peer in peers}
    return ReconcilerProcess(settings, manager, context, registered)


async def connect(settings: ProcessSettings, metrics: Metrics) -> KubeClient:
    return await KubeClient.connect(
        kubeconfig=settings.kubeconfig,
        qps=settings.qps,
        burst=settings.burst,
        user_agent=f"modelbooster-reconciler ({settings.identity})",
        metrics=metrics,
    )


async def serve(settings: ReconcilerSettings, *, stop: asyncio.Event, client: KubeClient, metrics: Metrics) -> None:
    """Register every controller, serve the probes and metrics, and run until `stop` is set."""
    runner: web.AppRunner | None = None
    try:
        process = build(settings, client, metrics, peers=PEERS)
        if settings.process.metrics_port:
            runner = web.AppRunner(make_app(process.manager), handle_signals=False, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, settings.process.metrics_host, settings.process.metrics_port).start()
            logger.info("serving /metrics, /healthz, /readyz on port %d", settings.process.metrics_port)
        await process.manager.run(stop)
    finally:
        if runner is not None:
            await runner.cleanup()
        await client.close()
