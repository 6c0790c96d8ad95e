"""How many replicas Scale actuation sets, given the optimiser's decision (docs/design/inferno.md §13).

As HPA does: the decision is clamped to the bounds; going up happens at once; going down only to the highest
decision of the stabilisation window (default 5 minutes), so a load that dips for a moment, or a decision
that flickers between n and n+1 around a boundary, does not take replicas away and give them back. The
history lives in the leader's memory: a Server seen for the first time (a new leader, a new Server) counts
its target's current replicas as a decision made now, so nothing is scaled down before a whole window of
decisions says so.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class Stabilizer:
    window: float  # seconds
    _history: deque[tuple[float, int]] = field(default_factory=deque)

    def recommend(self, *, now: float, desired: int, current: int) -> int:
        """The replicas to set now: `desired` (already clamped) when it is not lower than `current`, else the
        highest decision within the window (never above `current`)."""
        if not self._history:
            self._history.append((now, current))
        self._history.append((now, desired))
        while self._history[0][0] < now - max(self.window, 0.0):  # the entry just added always stays
            self._history.popleft()
        if desired >= current:
            return desired
        return min(current, max(value for _, value in self._history))


class Stabilizers:
    """One Stabilizer per Server (namespace, name); the window follows the Server's setting."""

    def __init__(self) -> None:
        self._by_server: dict[tuple[str, str], Stabilizer] = {}

    def get(self, namespace: str, name: str, *, window: float) -> Stabilizer:
        key = (namespace, name)
        stabilizer = self._by_server.get(key)
        if stabilizer is None:
            stabilizer = self._by_server[key] = Stabilizer(window=window)
        stabilizer.window = window
        return stabilizer

    def forget(self, namespace: str, name: str) -> None:
        self._by_server.pop((namespace, name), None)
