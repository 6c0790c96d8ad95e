"""Riding out an outage quietly: one log line when something starts failing, one when it works again.

During an API server outage every request fails, and a controller makes many: each worker's retries, each
informer's re-watch, each Event post. A WARNING per failure buries the one line that matters (the 100
ModelBoosters of a 10 s outage made ~1,000). `OutageLog` logs the first failure of a run at WARNING and the
recovery at INFO with how many failed meanwhile; the failures between are DEBUG, and counted by the caller's
metric when it has one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from reconciler.runtime.client import ApiError


def is_outage(error: BaseException) -> bool:
    """Whether an error says the API server (or the way to it) is unavailable, rather than something about the
    request: transport failures, 5xx and 429. These clear by themselves; the request is retried as it was."""
    return isinstance(error, ApiError) and (error.status == 0 or error.status >= 500 or error.status == 429)


class OutageLog:
    def __init__(self, logger: logging.Logger, what: str, *, count: Callable[[], None] | None = None) -> None:
        self._logger = logger
        self._what = what
        self._count = count
        self._failures = 0

    @property
    def failing(self) -> bool:
        return self._failures > 0

    def failed(self, error: BaseException, *, detail: str = "") -> None:
        if self._count is not None:
            self._count()
        self._failures += 1
        where = f" ({detail})" if detail else ""
        if self._failures == 1:
            self._logger.warning("%s failed%s: %s; until one succeeds, further failures are logged at DEBUG only",
                                 self._what, where, error)  # fmt: skip
        else:
            self._logger.debug("%s failed%s: %s", self._what, where, error)

    def succeeded(self) -> bool:
        """Note a success; True when it ends a run of failures."""
        if not self._failures:
            return False
        self._logger.info("%s works again (%d failed meanwhile)", self._what, self._failures)
        self._failures = 0
        return True
