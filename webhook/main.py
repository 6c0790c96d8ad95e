"""`modelbooster webhook`: run the admission server until SIGTERM, then shut down gracefully.

On SIGTERM (or SIGINT): for `--shutdown-delay` the webhook keeps serving, still ready, and every answer
closes its connection, so the client reconnects through the Service (to another pod whenever one is ready;
to this one while none is, e.g. when every replica is replaced at once); then the listeners close (no new
connections); requests already being served get up to `--shutdown-timeout` to finish; the process then exits
0. Keep delay + timeout below the pod's terminationGracePeriodSeconds. docs/design/webhook.md §8 says why.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from typing import Final

from aiohttp import web

from process.loop import process_runner
from webhook import settings as settings_module
from webhook.app import STATE, WebhookState, make_app, make_metrics_app
from webhook.http_log import protocol_logger
from webhook.memory import Allocator
from webhook.settings import Settings

log = logging.getLogger(__name__)

READ_AHEAD_BYTES: Final = 64 * 1024
LINGER_SECONDS: Final = 1.0


class WebhookServer:
    """Both listeners of one webhook process; tests drive it the way `run` does."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app = make_app(settings)
        self.metrics_app = make_metrics_app(self.app)
        self._runners: list[web.AppRunner] = []
        self._sites: list[web.TCPSite] = []
        self.https_port = 0
        self.metrics_port = 0
        # aiohttp stops reading from connections it is closing, so a request whose body is still arriving
        # could never finish inside the runner's own shutdown. We therefore drain first with the listeners
        # closed but connections untouched, and give the runner only a short final grace for stragglers.
        self._final_grace = min(1.0, settings.shutdown_timeout / 2)

    @property
    def state(self) -> WebhookState:
        return self.app[STATE]

    async def _listen(self, app: web.Application, *, host: str, port: int, ssl: bool) -> int:
        runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=self._final_grace,
            keepalive_timeout=self.settings.keepalive_timeout,
            # aiohttp reads ahead of the handler up to twice this per connection, outside the body budget.
            read_bufsize=READ_AHEAD_BYTES,
            # After an early answer (429, 413), the rest of the body is read and dropped this long so that
            # the client sees the answer rather than a reset; then the connection is closed.
            lingering_time=LINGER_SECONDS,
            logger=protocol_logger(),
        )
        await runner.setup()
        self._runners.append(runner)
        site = web.TCPSite(runner, host or None, port, ssl_context=self.state.reloader.context if ssl else None)
        await site.start()
        self._sites.append(site)
        return int(runner.addresses[0][1])

    async def start(self) -> None:
        # The metrics listener first: probes answer (not ready) while the certificate is awaited.
        self.metrics_port = await self._listen(
            self.metrics_app, host=self.settings.metrics_bind_address, port=self.settings.metrics_port, ssl=False
        )
        self.https_port = await self._listen(
            self.app, host=self.settings.bind_address, port=self.settings.port, ssl=True
        )
        log.info(
            "webhook serving", extra={"context": {"https_port": self.https_port, "metrics_port": self.metrics_port}}
        )

    async def stop(self) -> None:
        """Close every connection after its next answer, wait the configured delay, stop accepting, let in-flight
        requests finish."""
        state = self.state
        state.shutting_down = True
        if self.settings.shutdown_delay:
            await asyncio.sleep(self.settings.shutdown_delay)
        for site in self._sites:
            await site.stop()
        self._sites.clear()
        drain = self.settings.shutdown_timeout - self._final_grace
        try:
            await asyncio.wait_for(state.idle.wait(), timeout=drain)
        except TimeoutError:
            log.warning("shutdown timeout reached with %d admission request(s) in flight", state.in_flight)
        # Admission first: it holds the requests that matter; metrics stay scrapeable until the end.
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
        log.info("webhook stopped")


class ListenError(Exception):
    """A listener could not be opened (port in use, address not available)."""


async def serve(settings: Settings) -> None:
    server = WebhookServer(settings)
    # Everything allocated so far (modules, models, schemas) lives as long as the process. Taking it out of
    # the collector's generations keeps full collections from walking it: mutating requests allocate enough
    # to trigger them, and without this they put ~40 ms into the p99 (bench/webhook_bench.py, 16 connections).
    gc.collect()
    gc.freeze()
    allocator = Allocator.load()
    if allocator is not None:
        allocator.pin_mmap_threshold()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        try:
            await server.start()
        except OSError as error:
            raise ListenError(error.strerror or str(error)) from None
        await stop.wait()
        log.info("shutdown requested")
    finally:
        await server.stop()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    settings_module.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_module.from_args(args)
    except ValueError as error:
        print(f"modelbooster webhook: {error}", file=sys.stderr)
        return 2
    runner = process_runner(
        "webhook", event_loop=settings.event_loop, log_level=settings.log_level, log_format=settings.log_format
    )
    if runner is None:
        return 2
    try:
        runner(serve(settings))
    except ListenError as error:
        print(f"modelbooster webhook: cannot listen: {error}", file=sys.stderr)
        return 1
    return 0
