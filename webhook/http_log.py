"""aiohttp's connection-level logger, with the client's faults kept out of the error log.

aiohttp answers a request it cannot parse (a broken chunked body, a bad header) with 400 by itself and
logs it with `logger.exception`: any client could then fill the webhook's log with ERROR tracebacks.
Those are logged here at info, on one line; anything else stays an error with its traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError


class ClientFaultsAtInfo(logging.LoggerAdapter[logging.Logger]):
    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            reason = " ".join(str(exc_info.message or type(exc_info).__name__).split())
            self.info(f"{msg}: %s", *args, reason, **kwargs)
            return
        super().exception(msg, *args, exc_info=exc_info, **kwargs)


def protocol_logger() -> ClientFaultsAtInfo:
    return ClientFaultsAtInfo(logging.getLogger("aiohttp.server"))
