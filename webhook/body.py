"""Reading one request body under three bounds: its size, the shared memory budget, and a deadline.

`request.read()` would grow a buffer chunk by chunk with no deadline, after raising aiohttp's read-ahead
to the whole size limit; a client that sends most of a large body and stalls then holds it all for as
long as it likes. Here the body goes into one buffer of the announced size (reserved from the budget
first), with aiohttp's read-ahead left small, and the whole read must finish before the deadline.
"""

from __future__ import annotations

import asyncio
from typing import Final

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from webhook.budget import Reservation

RETRY_AFTER_SECONDS: Final = "1"


class BodyRefused(Exception):
    """The body is not read (or no longer): answer `status` with the one-line `message`, then close."""

    def __init__(self, status: int, message: str, *, reason: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        # The `reason` label of modelbooster_webhook_requests_dropped_total, or "" when not counted there.
        self.reason = reason
        self.headers = headers or {}


class ClientGone(Exception):
    """The client closed the connection before sending the whole body: there is no one to answer."""


def too_large(limit: int) -> BodyRefused:
    return BodyRefused(413, f"request body exceeds the limit of {limit} bytes", reason="")


def over_budget(budget: int) -> BodyRefused:
    return BodyRefused(
        429,
        f"request bodies in memory would exceed the budget of {budget} bytes; retry later",
        reason="body_budget",
        headers={"Retry-After": RETRY_AFTER_SECONDS},
    )


async def read_body(
    request: web.Request, *, limit: int, budget: int, reservation: Reservation, within: float
) -> bytes | bytearray:
    """The whole body, read within `within` seconds; raises BodyRefused or ClientGone."""
    length = request.content_length
    if length is not None:
        if length > limit:
            raise too_large(limit)
        if not reservation.grow(length):
            raise over_budget(budget)
    content = request.content
    if content.is_eof() and content.exception() is None:
        # The common case: a body of a few kB came in with the request head and is buffered whole already.
        # Taken as it is: no deadline to arm and cancel, no copy.
        return _buffered(content.read_nowait(), limit=limit, budget=budget, reservation=reservation)
    try:
        async with asyncio.timeout(within):
            if length is not None:
                return await _read_announced(request, length=length)
            return await _read_chunked(request, limit=limit, budget=budget, reservation=reservation)
    except TimeoutError:
        expected = f" of {length}" if length is not None else ""
        received = request.content.total_bytes
        raise BodyRefused(
            408, f"request body not received within {within:g} s ({received}{expected} bytes)", reason="read_timeout"
        ) from None
    except (ConnectionError, HttpProcessingError) as error:
        if request.transport is None or request.transport.is_closing():
            raise ClientGone from None
        raise BodyRefused(400, f"malformed request body: {_reason(error)}", reason="") from None


def _reason(error: Exception) -> str:
    if isinstance(error, HttpProcessingError) and error.message:
        return str(error.message)
    return str(error) or type(error).__name__


def _buffered(body: bytes, *, limit: int, budget: int, reservation: Reservation) -> bytes:
    # A chunked body's size is known only now; an announced one was reserved already (grow is then a no-op).
    if len(body) > limit:
        raise too_large(limit)
    if not reservation.grow(len(body)):
        raise over_budget(budget)
    return body


async def _read_announced(request: web.Request, *, length: int) -> bytearray:
    # One allocation of the final size: no growth, no copy into a second object at the end.
    body = bytearray(length)
    view = memoryview(body)
    filled = 0
    try:
        while filled < length:
            chunk = await request.content.readany()
            if not chunk:
                raise ClientGone
            view[filled : filled + len(chunk)] = chunk
            filled += len(chunk)
    finally:
        view.release()
    return body


async def _read_chunked(request: web.Request, *, limit: int, budget: int, reservation: Reservation) -> bytearray:
    body = bytearray()
    while chunk := await request.content.readany():
        size = len(body) + len(chunk)
        if size > limit:
            raise too_large(limit)
        if not reservation.grow(size):
            raise over_budget(budget)
        body += chunk
    return body
