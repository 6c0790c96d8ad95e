"""`modelbooster optimizer`: the Inferno optimizer as a REST server (docs/design/inferno.md §10), stateless by
default, stateful with `-F`; listening where the flags, else the reference's INFERNO_HOST/INFERNO_PORT, say."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping
from typing import Final

from aiohttp import web

from optimizer.rest.app import make_app
from process.flags import port as port_number
from process.flags import typed
from process.logs import configure

logger = logging.getLogger(__name__)

DEFAULT_PORT: Final = 8080


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-F",
        "--stateful",
        action="store_true",
        help="keep a system edited through the REST API (default: stateless, /optimizeOne only)",
    )
    parser.add_argument("--host", default=None, help="listen address (default: $INFERNO_HOST, else all interfaces)")
    parser.add_argument(
        "--port",
        type=typed("--port", port_number),
        default=None,
        help=f"listen port (default: $INFERNO_PORT, else {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        type=str.lower,  # DEBUG is accepted too, as by the other commands
        choices=["debug", "info", "warning", "error"],
        help="log level (default: info)",
    )
    parser.add_argument(
        "--log-format",
        default="text",
        choices=["text", "json"],
        help="text, or json (one object per line) (default: text)",
    )


def listen_address(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[str | None, int]:
    """Flags win over INFERNO_HOST / INFERNO_PORT; an empty host means all interfaces."""
    host = args.host if args.host is not None else environ.get("INFERNO_HOST", "")
    if args.port is not None:
        port = args.port
    else:
        text = environ.get("INFERNO_PORT", "") or str(DEFAULT_PORT)
        try:
            port = int(text)
        except ValueError:
            raise ValueError(f"INFERNO_PORT={text!r} is not a port number") from None
    if not 0 < port < 65536:
        raise ValueError(f"port {port} is outside 1..65535")
    return (host or None), port


def run(args: argparse.Namespace) -> int:
    configure(level=args.log_level, fmt=args.log_format)
    try:
        host, port = listen_address(args, os.environ)
    except ValueError as error:
        logger.error("%s", error)
        return 2
    mode = "stateful" if args.stateful else "stateless"
    logger.info("inferno optimizer (%s) listening on %s:%d", mode, host or "*", port)
    web.run_app(make_app(stateful=args.stateful), host=host, port=port, print=None)
    return 0
