"""When to end a client's keep-alive connection after an answer: balancing and shutdown.

kube-apiserver keeps its HTTP/1.1 connections to a webhook Service open for as long as they are used (its
client closes them only after 90 s idle), and the Service picks a pod once per connection: left alone, one
replica takes every admission request of a busy cluster, and a pod that is stopping keeps receiving them.
So an answer carries `Connection: close`, and the client's next request opens a new connection that the
Service balances over the ready pods:

- after SIGTERM, on every answer (the pod is going away; the Service sends the new connection elsewhere
  whenever another pod is ready);
- once a connection is older than `max_age` (jittered by ±20 % per connection, so that connections opened
  together are not closed together), but only while the kubelet vouches for the pod: its readiness probes
  have been answered "ready" without a gap longer than `probe_silence`, for at least that long. When the
  kubelet stops probing (it is down, or the node is cut off), the control plane soon marks the pod not
  ready and withdraws its endpoint, and a new connection could then find no pod at all; the connections
  already open still reach this pod, so they are kept until the probes have been steady again for
  `probe_silence` (the endpoint is ready again by then).

docs/design/webhook.md §9 says why.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

JITTER: Final = 0.2
# Connections remembered before the closed ones are forgotten (kube-apiserver holds a few per webhook).
PRUNE_ABOVE: Final = 64

Clock = Callable[[], float]


@dataclass
class ProbeRecord:
    """Readiness probes answered "ready": since when without a long gap, and the last one."""

    silence: float
    clock: Clock = time.monotonic
    last: float | None = None
    steady_since: float | None = None

    def answered(self, *, ready: bool) -> None:
        now = self.clock()
        if not ready:
            self.last = self.steady_since = None
            return
        if self.last is None or self.steady_since is None or now - self.last > self.silence:
            self.steady_since = now
        self.last = now

    def vouched(self) -> bool:
        """Probes have been answered ready lately, and steadily for at least `silence`."""
        if self.last is None or self.steady_since is None:
            return False
        now = self.clock()
        return now - self.last <= self.silence and now - self.steady_since >= self.silence


def _closed(connection: object) -> bool:
    # aiohttp's protocol object (one per connection) drops its transport when the connection is lost.
    return getattr(connection, "transport", None) is None


@dataclass
class ConnectionRotation:
    max_age: float  # 0: never close a connection for its age
    probes: ProbeRecord
    clock: Clock = time.monotonic
    jitter: Callable[[], float] = field(default=lambda: random.uniform(-JITTER, JITTER))
    closed: Callable[[object], bool] = _closed
    # connection -> (its first answer, its jittered age limit); closed ones are forgotten now and then
    _seen: dict[object, tuple[float, float]] = field(default_factory=dict)

    def due(self, connection: object) -> bool:
        """Whether the answer being sent on `connection` should be its last (balancing only)."""
        if self.max_age <= 0:
            return False
        now = self.clock()
        seen = self._seen.get(connection)
        if seen is None:
            if len(self._seen) >= PRUNE_ABOVE:
                self._seen = {key: value for key, value in self._seen.items() if not self.closed(key)}
            seen = self._seen[connection] = (now, self.max_age * (1 + self.jitter()))
        opened, limit = seen
        if now - opened < limit or not self.probes.vouched():
            return False
        del self._seen[connection]  # its last answer
        return True

    def remembered(self) -> int:
        return len(self._seen)
