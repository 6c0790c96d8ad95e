"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's algorithm and timings.

- Every `retry_period` a candidate reads the Lease. It takes it if it is free (no holder), if the holder is
  itself, or if the record has not changed for `lease_duration` **as observed locally** (the holder's clock is
  never trusted, only the moment we saw the record change). Writes use the Lease's resourceVersion, so two
  candidates cannot both win: the loser gets 409 and tries again later.
- The leader renews every `retry_period`; if it cannot renew successfully for `renew_deadline`, it stops
  leading at once (`renew_deadline < lease_duration`, so it stops before anyone else may take over).
- On shutdown the leader releases the Lease (empty holder, 1 s duration) so a successor starts at once instead of
  waiting out the lease (users expect a fast hand-off during rolling updates). A candidate told that the Lease
  was released or deleted (`released()`, from a watch on it) tries at once instead of at its next retry.
- With an `owner` (an ownerReference, the controller's Deployment), the Lease is written owned by it, so the
  garbage collector deletes the Lease with the Deployment: after `helm uninstall` no Lease of a dead holder is
  left for a reinstall to wait out (the uninstall deletes the RBAC that would let the leader release it).
  A Lease found missing is created again only while that Deployment exists: a leader of an uninstalled
  release, still in its shutdown delay, would otherwise write back the Lease the garbage collector just
  removed, and a reinstalled release's candidate would wait for it to be collected again.

`run(lead)` calls `lead()` each time leadership is acquired and cancels it when leadership is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import DEPLOYMENT, LEASE
from reconciler.runtime.metrics import Metrics
from reconciler.runtime.objects import meta_text

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseTimings:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period}, {self.renew_deadline}, {self.lease_duration}"
            )


def micro_time(moment: datetime | None = None) -> str:
    """metav1.MicroTime on the wire: RFC 3339 with microseconds."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        timings: LeaseTimings = LeaseTimings(),
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        owner: dict[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timings = timings
        self.owner = owner
        self._metrics = metrics
        self._clock = clock
        self._released = asyncio.Event()
        self._observed_record: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None
        self._leading = asyncio.Event()
        self._set_gauge(0)

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def released(self) -> None:
        """The Lease was seen released (no holder) or deleted: a candidate tries now, not at its next retry."""
        self._released.set()

    def _set_gauge(self, value: int) -> None:
        if self._metrics is not None:
            self._metrics.leader_status.labels(name=self.name).set(value)

    # --------------------------------------------------------------------- loop
    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Campaign forever; while leading, run `lead()`. Releases the Lease when cancelled while leading."""
        try:
            while True:
                await self._acquire()
                logger.info("became leader of lease %s/%s as %s", self.namespace, self.name, self.identity)
                self._leading.set()
                self._set_gauge(1)
                leading = asyncio.create_task(lead(), name="leading")
                renewing = asyncio.create_task(self._renew_until_lost(), name="lease-renew")
                try:
                    done, _ = await asyncio.wait({leading, renewing}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    self._leading.clear()
                    self._set_gauge(0)
                    for task in (leading, renewing):
                        task.cancel()
                    await asyncio.gather(leading, renewing, return_exceptions=True)
                if leading in done and not leading.cancelled() and leading.exception() is not None:
                    logger.error("leader work failed: %s", leading.exception())
                logger.warning("lost leadership of lease %s/%s", self.namespace, self.name)
        except asyncio.CancelledError:
            await self._release()
            raise

    async def _acquire(self) -> None:
        while True:
            self._released.clear()
            if await self._try_acquire_or_renew():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._released.wait(), self.timings.retry_period)

    async def _renew_until_lost(self) -> None:
        last_renew = self._clock()
        while True:
            await asyncio.sleep(self.timings.retry_period)
            if await self._try_acquire_or_renew():
                last_renew = self._clock()
            elif self._clock() - last_renew >= self.timings.renew_deadline or self._held_by_other():
                return

    def _held_by_other(self) -> bool:
        holder = ((self._lease or {}).get("spec") or {}).get("holderIdentity")
        return bool(holder) and holder != self.identity

    # ------------------------------------------------------------------ one try
    async def _try_acquire_or_renew(self) -> bool:
        now = datetime.now(UTC)
        try:
            lease = await self.client.get(LEASE, self.namespace, self.name)
        except ApiError as error:
            if not error.not_found:
                logger.warning("reading lease %s/%s failed: %s", self.namespace, self.name, error)
                return False
            return await self._create(now)
        self._lease = lease
        spec = lease.get("spec") or {}
        record = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("acquireTime"),
            spec.get("leaseDurationSeconds"),
            spec.get("leaseTransitions"),
        )
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = self._clock()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.timings.lease_duration)
        if holder and holder != self.identity and self._clock() < self._observed_at + duration:
            return False
        new_spec = dict(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = micro_time(now)
            # Like client-go: every change of holder counts, including taking over a released Lease.
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        new_spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=self._wire_duration(),
            renewTime=micro_time(now),
        )
        body = {**lease, "metadata": self._owned(lease.get("metadata") or {}), "spec": new_spec}
        try:
            self._lease = await self.client.replace(LEASE, body)
        except ApiError as error:
            if not error.conflict:
                logger.warning("updating lease %s/%s failed: %s", self.namespace, self.name, error)
            return False
        self._observe_own_write()
        return True

    async def _create(self, now: datetime) -> bool:
        if not await self._owner_exists():
            logger.info(
                "not creating lease %s/%s: Deployment %s, which would own it, is gone (its release was uninstalled)",
                self.namespace, self.name, (self.owner or {}).get("name"),
            )  # fmt: skip
            return False
        body = {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": self._owned({"name": self.name, "namespace": self.namespace}),
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._wire_duration(),
                "acquireTime": micro_time(now),
                "renewTime": micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self._lease = await self.client.create(LEASE, body)
        except ApiError as error:
            if not error.already_exists:
                logger.warning("creating lease %s/%s failed: %s", self.namespace, self.name, error)
            return False
        self._observe_own_write()
        return True

    async def _owner_exists(self) -> bool:
        """False only when the owning Deployment is known to be gone (not found, or another of the same name);
        any other answer leaves the decision to the create, as without an owner."""
        if self.owner is None or self.owner.get("kind") != DEPLOYMENT.kind:
            return True
        try:
            deployment = await self.client.get(DEPLOYMENT, self.namespace, str(self.owner.get("name")))
        except ApiError as error:
            return not error.not_found
        return meta_text(deployment, "uid") == self.owner.get("uid")

    def _owned(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """`metadata` with our owner among its ownerReferences (a Lease written before had none)."""
        if self.owner is None:
            return metadata
        references = [ref for ref in metadata.get("ownerReferences") or [] if isinstance(ref, dict)]
        if any(ref.get("uid") == self.owner.get("uid") for ref in references):
            return metadata
        # A reference to an earlier Deployment of the same name (deleted, then created again) goes.
        ours = (self.owner["kind"], self.owner["name"])
        kept = [ref for ref in references if (ref.get("kind"), ref.get("name")) != ours]
        return {**metadata, "ownerReferences": [*kept, self.owner]}

    def _wire_duration(self) -> int:
        # Whole seconds on the wire; rounding up never lets a candidate take over early.
        return math.ceil(self.timings.lease_duration)

    def _observe_own_write(self) -> None:
        spec = (self._lease or {}).get("spec") or {}
        self._observed_record = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("acquireTime"),
            spec.get("leaseDurationSeconds"),
            spec.get("leaseTransitions"),
        )
        self._observed_at = self._clock()

    async def _release(self) -> None:
        """Give the Lease up if we hold it; best effort, bounded, never raises."""
        lease = self._lease
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        spec = dict(lease.get("spec") or {})
        now = micro_time()
        spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=now, acquireTime=now)
        spec = {key: value for key, value in spec.items() if value is not None}
        try:
            await asyncio.wait_for(self.client.replace(LEASE, {**lease, "spec": spec}), timeout=5)
            logger.info("released lease %s/%s", self.namespace, self.name)
        except (ApiError, TimeoutError) as error:
            logger.warning("releasing lease %s/%s failed: %s", self.namespace, self.name, error)
        self._lease = None
