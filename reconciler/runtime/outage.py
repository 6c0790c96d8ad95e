"""Riding out an outage quietly: one log line when something starts failing, one when it works again.

During an API server outage every request fails, and a controller makes many: each worker's retries, each
informer's re-watch, each Event post. A WARNING per failure buries the one line that matters (the 100
ModelBoosters of a 10 s outage made ~1,000). `OutageLog` logs the first failure of a run at WARNING and the
recovery at INFO with how many failed meanwhile; the failures between are DEBUG, and counted by the caller's
metric when it has one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from reconciler.runtime.client import ApiError


def is_outage(error: BaseException) -> bool:
    """Whether an error says the API server (or the way to it) is unavailable, rather than something about the
    request: transport failures, 5xx and 429 (or an error that says it stands for only such failures, with an
    `outage` attribute). These clear by themselves; the request is retried as it was."""
    if getattr(error, "outage", False) is True:
        return True
    return isinstance(error, ApiError) and (error.status == 0 or error.status >= 500 or error.status == 429)


UNAVAILABLE_STATUSES = frozenset({0, 429, 502, 503, 504})


def is_unavailable(error: BaseException) -> bool:
    """Narrower than `is_outage`: the server (or the way to it) did not serve the request at all — no connection,
    too many requests, a gateway or the server itself unavailable. A `500` is not among them: it may be a
    webhook failing on every request, which a user must see."""
    return isinstance(error, ApiError) and error.status in UNAVAILABLE_STATUSES


class OutageLog:
    """One WARNING when failures start, one INFO when they end. A relapse within `grace` seconds of the end
    (a reconcile that needed no request succeeded in the middle of an outage, say) continues the same outage
    quietly: its start and end are DEBUG, so a flapping outage still makes two lines."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        *,
        count: Callable[[], None] | None = None,
        grace: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._what = what
        self._count = count
        self._grace = grace
        self._clock = clock
        self._failures = 0
        self._announced = False  # the current run of failures was logged at WARNING
        self._ended_at: float | None = None

    @property
    def failing(self) -> bool:
        return self._failures > 0

    def failed(self, error: BaseException, *, detail: str = "") -> None:
        if self._count is not None:
            self._count()
        self._failures += 1
        where = f" ({detail})" if detail else ""
        if self._failures == 1:
            relapse = self._ended_at is not None and self._clock() - self._ended_at < self._grace
            self._announced = not relapse
            if self._announced:
                self._logger.warning("%s failed%s: %s; until one succeeds, further failures are logged at DEBUG "
                                     "only", self._what, where, error)  # fmt: skip
                return
        self._logger.debug("%s failed%s: %s", self._what, where, error)

    def succeeded(self) -> bool:
        """Note a success; True when it ends a run of failures."""
        if not self._failures:
            return False
        level = logging.INFO if self._announced else logging.DEBUG
        self._logger.log(level, "%s works again (%d failed meanwhile)", self._what, self._failures)
        self._failures = 0
        self._ended_at = self._clock()
        return True
