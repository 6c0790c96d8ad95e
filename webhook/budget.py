"""The memory budget for request bodies: bytes are reserved before they are buffered, released after parsing.

A body announced with Content-Length reserves its whole size before a byte of it is read, so a request
that cannot fit is answered at once (429) instead of being half-read; a chunked body reserves as it
grows. Bodies over `SMALL_BODY` may only fill three quarters of the budget: the last quarter is kept
for small requests, so that a flood of large stalled bodies cannot crowd out the ordinary few-kB
admission requests of a cluster.
"""

from __future__ import annotations

from typing import Final

SMALL_BODY: Final = 64 * 1024


class BodyBudget:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.large_capacity = capacity - capacity // 4
        # Read by the metrics at scrape time, not pushed on every change.
        self.used = 0
        # Bytes given back since the owner last looked (see `take_released`): how much a trim may return.
        self._released = 0

    def reservation(self) -> Reservation:
        return Reservation(self)

    def try_grow(self, *, held: int, wanted: int) -> bool:
        used = self.used + wanted - held
        if used > self.capacity or (wanted > SMALL_BODY and used > self.large_capacity):
            return False
        self.used = used
        return True

    def give_back(self, held: int) -> None:
        self._released += held
        self.used -= held

    def take_released(self) -> int:
        """Bytes released since the previous call."""
        released, self._released = self._released, 0
        return released


class Reservation:
    """The bytes one request holds; grown while its body arrives, released once (idempotent)."""

    def __init__(self, budget: BodyBudget) -> None:
        self._budget = budget
        self.held = 0

    def grow(self, wanted: int) -> bool:
        """Hold `wanted` bytes in all (no less than now); False, holding what it held, when they do not fit."""
        if wanted <= self.held:
            return True
        if not self._budget.try_grow(held=self.held, wanted=wanted):
            return False
        self.held = wanted
        return True

    def release(self) -> None:
        if self.held:
            self._budget.give_back(self.held)
            self.held = 0
