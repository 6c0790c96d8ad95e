"""The Inferno controller as a peer of the process (reconciler/peer.py): its informers, its reconcile and its
closed loop on the process's manager, client, Event recorder, field manager and namespaces. The solver is
embedded unless INFERNO_HOST/INFERNO_PORT name a remote optimizer (docs/design/inferno.md §9)."""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from reconciler.inferno.controller import OptimizerReconciler
from reconciler.inferno.kinds import INFERNO_INPUT_KINDS, INFERNO_KINDS, OPTIMIZER, SERVER
from reconciler.inferno.loop import ClosedLoop
from reconciler.inferno.mapping import map_inputs_to_optimizers, map_optimizer
from reconciler.inferno.metrics import InfernoMetrics
from reconciler.inferno.prometheus import PrometheusClient
from reconciler.inferno.remote import RemoteOptimizer
from reconciler.inferno.settings import NAME, InfernoSettings, add_arguments, field_manager_of, settings_from_args
from reconciler.inferno.solvers import EmbeddedSolver, RemoteSolver, Solver
from reconciler.peer import Context, Peer
from reconciler.runtime.conditions import rfc3339_now
from reconciler.runtime.controller import Controller
from reconciler.runtime.objects import without_managed_fields
from reconciler.runtime.ratelimit import default_controller_rate_limiter

logger = logging.getLogger(__name__)

CONTROLLER_NAME: Final = NAME  # also its flags' prefix


def register(context: Context, settings: InfernoSettings) -> OptimizerReconciler | None:
    """The Inferno controller and its six informers on the process's manager (nothing when disabled)."""
    if not settings.enabled:
        logger.info("inferno controller disabled")
        return None
    manager, client = context.manager, context.client
    # Inferno's own list narrows the process's watch; without one it watches what the process watches.
    namespaces = settings.namespaces or context.settings.namespaces
    field_manager = field_manager_of(context.settings.field_manager)
    metrics = InfernoMetrics(manager.metrics.registry)
    informers = {
        kind: manager.informer(kind, namespaces=namespaces, transform=without_managed_fields) for kind in INFERNO_KINDS
    }
    solver = _solver(settings, metrics)
    loop = ClosedLoop(
        client=client,
        servers=informers[SERVER],
        server_kind=SERVER,
        recorder=context.recorder,
        metrics=metrics,
        field_manager=field_manager,
        prometheus=None if settings.prometheus is None else PrometheusClient(settings.prometheus),
        queries=settings.load_queries,
        signal_queries=settings.signal_queries,
        ceilings=settings.ceilings,
        concurrency=settings.write_concurrency,
        now=rfc3339_now,
    )
    manager.add_cleanup(loop.close)
    reconciler = OptimizerReconciler(
        client=client,
        informers=informers,
        recorder=context.recorder,
        solver=solver,
        metrics=metrics,
        field_manager=field_manager,
        write_concurrency=settings.write_concurrency,
        loop=loop,
    )
    controller = Controller(
        name=CONTROLLER_NAME,
        reconcile=reconciler.reconcile,
        workers=settings.workers,
        rate_limiter=default_controller_rate_limiter(base_delay=settings.backoff_base, max_delay=settings.backoff_max),
        metrics=manager.metrics,
    )
    controller.watch(informers[OPTIMIZER], map_optimizer, primary=True)
    manager.add_leader_task("inferno-decisions", lambda: _publish_while_leading(metrics), needs=())
    mapper = map_inputs_to_optimizers(informers[OPTIMIZER], every_optimizer=solver.mirrors)
    for kind in INFERNO_INPUT_KINDS:
        controller.watch(informers[kind], mapper)
    manager.add_controller(controller)
    logger.info(
        "inferno controller registered (%s; load %s)",
        settings.mode,
        "as the Servers say"
        if settings.prometheus is None
        else f"from Prometheus at {settings.prometheus.display_url}",
    )
    return reconciler


def _solver(settings: InfernoSettings, metrics: InfernoMetrics) -> Solver:
    if settings.remote is None:
        return EmbeddedSolver()
    return RemoteSolver(RemoteOptimizer(settings.remote, observe=metrics.count_remote))


async def _publish_while_leading(metrics: InfernoMetrics) -> None:
    """The per-Server series are the leader's decisions: a replica that stops leading withdraws them, so KEDA or
    an HPA never reads a stale decision beside the new leader's."""
    try:
        await asyncio.Event().wait()
    finally:
        metrics.withdraw_servers()


PEER: Final = Peer(
    name=CONTROLLER_NAME,
    default_settings=InfernoSettings,
    add_arguments=add_arguments,
    settings_from_args=settings_from_args,
    register=register,
)
