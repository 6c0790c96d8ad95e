"""The manager: one process's informers, controllers, leader election, leader-only tasks and probes.

Lifecycle of `run(stop)`:
1. start every informer (list+watch) — on every replica, leader or not, so a new leader starts warm;
2. serve `/healthz`, `/readyz` (all caches synced) and `/metrics`;
3. campaign for the Lease (or lead at once with leader election off); while leading, run each controller's
   workers and resync loop once that controller's own caches have synced (a controller whose CRD is missing
   holds up no other), and each registered leader task once the informers it needs have synced;
4. on `stop`: a leader keeps leading for `shutdown_delay` (a successor — the replacement pod of a one-replica
   Deployment — has that long to start and sync its caches, so the hand-off leaves no gap in reconciling),
   then stops handing out work, lets in-flight reconciles finish (bounded by `shutdown_timeout`), stops
   leading (which releases the Lease), stops the informers and closes the client.

The Lease is watched (by name) so that a candidate takes a released Lease at once, and, with
`lease_owner_deployment`, written owned by that Deployment so that deleting it (`helm uninstall`) deletes the
Lease too (reconciler/runtime/leader.py).

Informers for kinds the cluster may not serve (a CRD installed later, or removed) are not registered up front:
`start_informer(informer)` runs one while the process runs and `stop_informer(informer)` ends it
(reconciler/runtime/kind_informers.py decides when, from reconciler/runtime/discovery.py). A running one counts for
`/readyz` like the others; a stopped one no longer does, so nothing waits on a kind that is not served.

Other duties that only the leader may perform register with `add_leader_task(name, factory, needs=...)`:
`factory()` is called each time leadership starts (after the informers in `needs`, by default all of them, have
synced), its task is cancelled when leadership ends, and it is restarted (after a short backoff) if it crashes.
Example: the webhook certificate duty (Secret + caBundle + rotation). `add_cleanup(coro_factory)` runs after stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.controller import Controller
from reconciler.runtime.informer import DEFAULT_PAGE_SIZE, IndexFunc, Informer, Transform
from reconciler.runtime.kinds import DEPLOYMENT, LEASE, Kind
from reconciler.runtime.leader import LeaderElector, LeaseTimings
from reconciler.runtime.metrics import Metrics
from reconciler.runtime.objects import meta_text

logger = logging.getLogger(__name__)

LeaderTaskFactory = Callable[[], Coroutine[Any, Any, None]]


class InformerOptions(TypedDict, total=False):
    """What selects and shapes an informer's cache (the manager adds its own timings)."""

    namespaces: Sequence[str]  # empty: all
    label_selector: str | None
    field_selector: str | None
    transform: Transform | None
    indexers: dict[str, IndexFunc] | None
    page_size: int  # objects per list page (default 100); smaller for kinds whose objects are large
    stream_pages: bool  # transform each listed object as it is decoded, never holding a decoded page whole


@dataclass
class ManagerOptions:
    leader_elect: bool = True
    lease_name: str = "modelbooster-reconciler"
    lease_namespace: str = "default"
    identity: str = "modelbooster"
    lease: LeaseTimings = field(default_factory=LeaseTimings)
    resync_period: float = 600.0
    shutdown_timeout: float = 25.0
    shutdown_delay: float = 0.0
    lease_owner_deployment: str = ""
    watch_timeout: int = 300
    watch_read_timeout: float | None = None
    leader_task_backoff: float = 1.0


class Manager:
    def __init__(self, client: KubeClient, *, options: ManagerOptions, metrics: Metrics) -> None:
        self.client = client
        self.options = options
        self.metrics = metrics
        self._informers: dict[tuple[Kind, tuple[str, ...], str | None, str | None], Informer] = {}
        self._controllers: list[Controller] = []
        self._leader_tasks: list[tuple[str, LeaderTaskFactory, tuple[Informer, ...] | None]] = []
        self._informer_tasks: list[asyncio.Task[None]] = []
        # Informers started and stopped while running (kinds that come and go with their CRD).
        self._dynamic: dict[Informer, asyncio.Task[None]] = {}
        # Coroutines that run beside the informers on every replica, leader or not, until shutdown.
        self._background: list[Callable[[], Coroutine[Any, Any, None]]] = []
        self._campaign: asyncio.Task[None] | None = None
        self._cleanups: list[Callable[[], Coroutine[Any, Any, None]]] = []
        self._stopping = False
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(
                client,
                namespace=options.lease_namespace,
                name=options.lease_name,
                identity=options.identity,
                timings=options.lease,
                metrics=metrics,
            )
        self._leading_without_election = asyncio.Event()
        # Informers list one at a time (see Informer._gated_list); watches are not gated.
        self._list_gate = asyncio.Semaphore(1)
        if self.elector is not None:
            lease = self.informer(
                LEASE, namespaces=[options.lease_namespace], field_selector=f"metadata.name={options.lease_name}"
            )
            lease.add_handler(self._lease_changed)

    # ------------------------------------------------------------------ wiring
    def informer(self, kind: Kind, **options: Unpack[InformerOptions]) -> Informer:
        """The informer for `kind` with these selectors, created on first use and shared afterwards."""
        key = (
            kind,
            tuple(options.get("namespaces") or ()),
            options.get("label_selector"),
            options.get("field_selector"),
        )
        informer = self._informers.get(key)
        if informer is None:
            informer = self._informers[key] = self.new_informer(kind, **options)
        return informer

    def new_informer(self, kind: Kind, **options: Unpack[InformerOptions]) -> Informer:
        """An informer with the manager's settings that is not registered: run it with `start_informer`."""
        return Informer(
            self.client,
            kind,
            namespaces=options.get("namespaces") or None,
            label_selector=options.get("label_selector"),
            field_selector=options.get("field_selector"),
            transform=options.get("transform"),
            indexers=options.get("indexers"),
            page_size=options.get("page_size") or DEFAULT_PAGE_SIZE,
            stream_pages=bool(options.get("stream_pages")),
            watch_timeout=self.options.watch_timeout,
            read_timeout=self.options.watch_read_timeout,
            metrics=self.metrics,
            list_gate=self._list_gate,
        )

    def start_informer(self, informer: Informer) -> None:
        """Run `informer` until `stop_informer` or shutdown (call while the manager runs)."""
        if informer in self._dynamic or self._stopping:
            return
        self._dynamic[informer] = asyncio.create_task(informer.run(), name=f"informer-{informer.name}")

    async def stop_informer(self, informer: Informer) -> None:
        task = self._dynamic.pop(informer, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def add_controller(self, controller: Controller) -> None:
        self._controllers.append(controller)

    def add_cleanup(self, cleanup: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `cleanup()` once the manager has stopped (close sessions and the like)."""
        self._cleanups.append(cleanup)

    def add_background(self, factory: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `factory()` beside the informers on every replica from start to shutdown (e.g. to act once a
        cache has synced); it must not fail."""
        self._background.append(factory)

    def add_leader_task(
        self, name: str, factory: LeaderTaskFactory, *, needs: Sequence[Informer] | None = None
    ) -> None:
        """Run `factory()` while this process leads (see module docstring), once the informers it `needs` have
        synced (default: every informer of the manager)."""
        self._leader_tasks.append((name, factory, None if needs is None else tuple(needs)))

    @property
    def informers(self) -> list[Informer]:
        """The registered informers and the running ones started with `start_informer`."""
        return [*self._informers.values(), *self._dynamic]

    @property
    def controllers(self) -> list[Controller]:
        return list(self._controllers)

    # ------------------------------------------------------------------ state
    @property
    def is_leader(self) -> bool:
        if self.elector is None:
            return self._leading_without_election.is_set()
        return self.elector.is_leader

    def caches_synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers)

    def ready(self) -> bool:
        return not self._stopping and self.caches_synced()

    def healthy(self) -> bool:
        tasks = [*self._informer_tasks, *self._dynamic.values()]
        return not any(task.done() for task in tasks) or self._stopping

    async def wait_synced(self) -> None:
        await asyncio.gather(*(informer.wait_synced() for informer in self.informers))

    # ------------------------------------------------------------------ leader election
    def _lease_changed(self, event: str, _old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        holder = ((new or {}).get("spec") or {}).get("holderIdentity")
        if self.elector is not None and (event == "DELETED" or not holder):
            self.elector.released()

    async def _lease_owner(self) -> dict[str, Any] | None:
        """The ownerReference of the Lease: our Deployment, read once; None (logged) when it cannot be read."""
        name, namespace = self.options.lease_owner_deployment, self.options.lease_namespace
        if not name:
            return None
        try:
            deployment = await asyncio.wait_for(self.client.get(DEPLOYMENT, namespace, name), timeout=10)
        except (ApiError, TimeoutError) as error:
            logger.warning(
                "cannot read Deployment %s/%s to own the Lease (%s): the Lease will outlive an uninstall",
                namespace, name, error,
            )  # fmt: skip
            return None
        return {"apiVersion": DEPLOYMENT.api_version, "kind": DEPLOYMENT.kind, "name": name,
                "uid": meta_text(deployment, "uid")}  # fmt: skip

    # ------------------------------------------------------------------ running
    async def run(self, stop: asyncio.Event) -> None:
        self._informer_tasks = [
            asyncio.create_task(informer.run(), name=f"informer-{informer.name}")
            for informer in self._informers.values()
        ]
        background = [asyncio.create_task(factory()) for factory in self._background]
        if self.elector is not None:
            self.elector.owner = await self._lease_owner()
            campaign = asyncio.create_task(self.elector.run(self._lead), name="leader-election")
        else:
            campaign = asyncio.create_task(self._lead_without_election(), name="leading")
        self._campaign = campaign
        try:
            await stop.wait()
            if self.options.shutdown_delay > 0 and self.is_leader:
                logger.info(
                    "shutdown requested: leading %.0f s more so that a successor can start",
                    self.options.shutdown_delay,
                )
                await asyncio.sleep(self.options.shutdown_delay)
        finally:
            self._stopping = True
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self._shutdown(campaign)

    async def _lead_without_election(self) -> None:
        self._leading_without_election.set()
        self.metrics.leader_status.labels(name=self.options.lease_name).set(1)
        try:
            await self._lead()
        finally:
            self._leading_without_election.clear()
            self.metrics.leader_status.labels(name=self.options.lease_name).set(0)

    async def _lead(self) -> None:
        logger.info("leading: starting %d controller(s) as their caches sync", len(self._controllers))
        tasks = []
        for controller in self._controllers:
            tasks.append(asyncio.create_task(controller.run_workers(), name=f"{controller.name}-workers"))
            tasks.append(
                asyncio.create_task(controller.run_resync(self.options.resync_period), name=f"{controller.name}-resync")
            )
        for name, factory, needs in self._leader_tasks:
            tasks.append(asyncio.create_task(self._supervise(name, factory, needs), name=name))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _supervise(self, name: str, factory: LeaderTaskFactory, needs: tuple[Informer, ...] | None) -> None:
        informers = list(self._informers.values()) if needs is None else needs
        await asyncio.gather(*(informer.wait_synced() for informer in informers))
        while True:
            try:
                await factory()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("leader task %s failed; restarting in %.1fs", name, self.options.leader_task_backoff)
                await asyncio.sleep(self.options.leader_task_backoff)

    async def _shutdown(self, campaign: asyncio.Task[None]) -> None:
        for controller in self._controllers:
            controller.queue.shutdown()
        # Workers finish the item in hand and exit; give them the grace period, then cut them off.
        deadline = asyncio.get_running_loop().time() + self.options.shutdown_timeout
        while any(controller.queue.processing() for controller in self._controllers):
            if asyncio.get_running_loop().time() >= deadline:
                logger.warning("shutdown: in-flight reconciles did not finish in %.0fs", self.options.shutdown_timeout)
                break
            await asyncio.sleep(0.05)
        campaign.cancel()  # stops leading; the elector releases the Lease
        with contextlib.suppress(asyncio.CancelledError):
            await campaign
        dynamic = list(self._dynamic.values())
        self._dynamic.clear()
        for task in [*self._informer_tasks, *dynamic]:
            task.cancel()
        await asyncio.gather(*self._informer_tasks, *dynamic, return_exceptions=True)
        for cleanup in self._cleanups:
            try:
                await cleanup()
            except Exception:
                logger.exception("cleanup failed")
        logger.info("manager stopped")
