"""Exponential backoff for loops that retry after a failure (watch re-lists, certificate checks, ...)."""

from __future__ import annotations

import random

_MAX_DOUBLINGS = 64  # keeps the power finite however long the failures go on; every cap is reached first


def backoff_delay(failures: int, *, base: float, cap: float, jitter: float = 0.0) -> float:
    """Seconds to wait after the `failures`-th failure in a row: base, 2·base, 4·base, ... at most `cap`.

    `jitter` spreads replicas that failed together (e.g. after an API server restart) by up to that fraction
    on top, so they do not all come back in the same instant.
    """
    delay = min(base * 2.0 ** min(max(failures - 1, 0), _MAX_DOUBLINGS), cap)
    return delay * (1 + random.random() * jitter) if jitter else delay
