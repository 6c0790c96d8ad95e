"""How many replicas Scale actuation sets, given the decision, as HPA does: up at once, down only to the highest
decision of the stabilisation window, so a dip or a flicker takes nothing away (docs/design/inferno.md §13).
Only the decisions that can still be the window's highest are kept: bounded by the replica counts, never by
the window (keeping every decision of a long window once held 300,000 entries and cost 10 ms a decision).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class Stabilizer:
    window: float  # seconds
    # (time, replicas), times increasing and replicas strictly decreasing: the front is the window's highest.
    _peaks: deque[tuple[float, int]] = field(default_factory=deque)
    _seen: bool = False

    def __len__(self) -> int:
        return len(self._peaks)

    def recommend(self, *, now: float, desired: int, current: int) -> int:
        """The replicas to set now: `desired` (already clamped) when it is not lower than `current`, else the
        highest decision within the window (never above `current`)."""
        if not self._seen:
            self._seen = True
            self._add(now, current)
        self._add(now, desired)
        while self._peaks[0][0] < now - max(self.window, 0.0):  # the entry just added always stays
            self._peaks.popleft()
        if desired >= current:
            return desired
        return min(current, self._peaks[0][1])

    def _add(self, now: float, replicas: int) -> None:
        # An older decision no higher than this one can never again be the window's highest: this one outlives it.
        while self._peaks and self._peaks[-1][1] <= replicas:
            self._peaks.pop()
        self._peaks.append((now, replicas))


class Stabilizers:
    """One Stabilizer per Server (namespace, name); the window follows the Server's setting. Servers are
    forgotten when deleted, so the count follows the Servers that exist."""

    def __init__(self) -> None:
        self._by_server: dict[tuple[str, str], Stabilizer] = {}

    def __len__(self) -> int:
        return len(self._by_server)

    def get(self, namespace: str, name: str, *, window: float) -> Stabilizer:
        key = (namespace, name)
        stabilizer = self._by_server.get(key)
        if stabilizer is None:
            stabilizer = self._by_server[key] = Stabilizer(window=window)
        stabilizer.window = window
        return stabilizer

    def forget(self, namespace: str, name: str) -> None:
        self._by_server.pop((namespace, name), None)
