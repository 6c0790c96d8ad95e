"""The reconciler process assembled: client, manager, CRD discovery, Event recorder, probes, and every peer
registered the same way (reconciler/peer.py).

`build(settings, client, metrics, peers=...)` wires everything without starting it (tests start it against the
fake API server, with the ModelBooster controller alone by default); `serve(settings, stop=...)` connects to
the cluster, registers every peer, serves the probes and metrics, and runs until `stop`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from process.build import register_build_info, version
from reconciler.certduty.wiring import PEER as CERTDUTY
from reconciler.crdcheck.wiring import PEER as CRDCHECK
from reconciler.inferno.wiring import PEER as INFERNO
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.peer import Context, Peer, new_context
from reconciler.runtime.client import KubeClient
from reconciler.runtime.discovery import CrdDiscovery
from reconciler.runtime.health import make_app
from reconciler.runtime.manager import Manager
from reconciler.runtime.metrics import Metrics
from reconciler.settings import ProcessSettings

logger = logging.getLogger(__name__)

S = TypeVar("S")
R = TypeVar("R")

# Every peer of the process, in the order they register: a new controller is one more line here.
PEERS: tuple[Peer[Any, Any], ...] = (MODELBOOSTER, CERTDUTY, INFERNO, CRDCHECK)


class ReconcilerSettings:
    """The whole process's settings: its own (the manager's) and each peer's, by peer name
    (`ReconcilerSettings(process=..., modelbooster=ModelBoosterSettings(...))`); a peer not named runs with its
    defaults."""

    def __init__(self, process: ProcessSettings | None = None, **peers: Any) -> None:
        self.process = ProcessSettings() if process is None else process
        self._peers: dict[str, Any] = dict(peers)

    @property
    def named(self) -> frozenset[str]:
        """The peers given settings of their own."""
        return frozenset(self._peers)

    def of(self, peer: Peer[S, Any]) -> S:
        settings: S = self._peers[peer.name] if peer.name in self._peers else peer.default_settings()
        return settings

    def replace(self, process: ProcessSettings | None = None, **peers: Any) -> ReconcilerSettings:
        """These settings with the process's and the named peers' replaced."""
        return ReconcilerSettings(self.process if process is None else process, **{**self._peers, **peers})

    def __repr__(self) -> str:
        peers = "".join(f", {name}={settings!r}" for name, settings in self._peers.items())
        return f"ReconcilerSettings(process={self.process!r}{peers})"


@dataclass
class ReconcilerProcess:
    settings: ReconcilerSettings
    manager: Manager
    context: Context
    # What each registered peer's `register` returned, by peer name.
    registered: dict[str, Any]

    def registered_by(self, peer: Peer[Any, R]) -> R:
        """What `peer`'s `register` returned (KeyError when it is not one of the process's peers)."""
        registered: R = self.registered[peer.name]
        return registered

    @property
    def discovery(self) -> CrdDiscovery:
        return self.context.discovery


def build(
    settings: ReconcilerSettings,
    client: KubeClient,
    metrics: Metrics,
    *,
    peers: Sequence[Peer[Any, Any]] = (MODELBOOSTER,),
) -> ReconcilerProcess:
    names = {peer.name for peer in peers}
    if len(names) != len(peers) or not settings.named <= names:
        raise ValueError(f"settings name peers {sorted(settings.named)}; the process has {[p.name for p in peers]}")
    process = settings.process
    manager = Manager(client, options=process.manager_options(), metrics=metrics)
    register_build_info(metrics.registry, component="reconciler")
    context = new_context(manager, process, version=version())
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
