"""`modelbooster reconciler`: run the controllers.

Every flag can also be given as an environment variable `MODELBOOSTER_RECONCILER_<FLAG>` (upper case, dashes as
underscores, e.g. `MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS=8`); the flag wins over the variable, which wins
over the built-in default. The process's own flags are in reconciler/settings.py; each controller's are in its
package's settings.py (reconciler/modelbooster, certduty, inferno, crdcheck), a controller's under its name with
the old spellings kept (process/flags.py `prefixed`). The settings ConfigMap (`--modelbooster-config-map`)
overrides the image and engine-env settings while running (reconciler/modelbooster/settings.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from process.loop import process_runner
from reconciler.assembly import PEERS, ReconcilerSettings, connect, serve
from reconciler.peer import Peer
from reconciler.runtime.environment import SettingsError
from reconciler.runtime.metrics import Metrics
from reconciler.settings import add_process_arguments, process_settings_from_args

logger = logging.getLogger(__name__)


def add_arguments(
    parser: argparse.ArgumentParser,
    *,
    environ: Mapping[str, str] | None = None,
    peers: Sequence[Peer[Any, Any]] = PEERS,
) -> None:
    env = os.environ if environ is None else environ
    add_process_arguments(parser, env)
    for peer in peers:
        peer.add_arguments(parser, env)


def settings_from_args(
    args: argparse.Namespace, *, environ: Mapping[str, str] | None = None, peers: Sequence[Peer[Any, Any]] = PEERS
) -> ReconcilerSettings:
    env = os.environ if environ is None else environ
    each = {peer.name: peer.settings_from_args(args, env) for peer in peers}
    return ReconcilerSettings(process_settings_from_args(args, env), **each)


async def _serve_until_signalled(settings: ReconcilerSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    metrics = Metrics()
    client = await connect(settings.process, metrics)
    await serve(settings, stop=stop, client=client, metrics=metrics)


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
    except (SettingsError, ValueError) as error:
        print(f"modelbooster reconciler: {error}", file=sys.stderr)
        return 2
    process = settings.process
    runner = process_runner(
        "reconciler", event_loop=args.event_loop, log_level=process.log_level, log_format=process.log_format
    )
    if runner is None:
        return 2
    try:
        runner(_serve_until_signalled(settings))
    except OSError as error:
        print(f"modelbooster reconciler: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # configuration problems surface here (no kubeconfig, bad credentials)
        logger.debug("fatal error", exc_info=True)
        print(f"modelbooster reconciler: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0
