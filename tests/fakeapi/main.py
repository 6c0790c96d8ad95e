"""`python -m tests.fakeapi`: serve a fake API server until interrupted, for manual use or as a subprocess.

When the server is ready it writes the kubeconfig (if asked) and prints one JSON line on stdout:
`{"url": ..., "port": ..., "kubeconfig": ...}`, so a parent process can wait for that line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

from tests.fakeapi.app import ServerConfig
from tests.fakeapi.server import FakeApiServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--kubeconfig", type=Path, help="write a kubeconfig for the server to this file")
    parser.add_argument("--tls", action="store_true", help="serve HTTPS with a throw-away CA (put in the kubeconfig)")
    parser.add_argument(
        "--crd", type=Path, action="append", default=[], help="register the CRDs in this YAML file (repeatable)"
    )
    parser.add_argument("--history-size", type=int, default=1000, help="watch events kept per resource")
    parser.add_argument("--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks")
    parser.add_argument(
        "--no-require-namespaces",
        action="store_true",
        help="accept namespaced objects in namespaces that do not exist",
    )


async def serve(args: argparse.Namespace) -> int:
    config = ServerConfig(
        history_size=args.history_size,
        bookmark_interval=args.bookmark_interval,
        require_namespaces=not args.no_require_namespaces,
    )
    server = FakeApiServer(config, host=args.host, port=args.port, tls=args.tls)
    await server.start()
    try:
        for path in args.crd:
            server.register_crd(path)
        if args.kubeconfig:
            server.write_kubeconfig(args.kubeconfig)
        ready = {"url": server.url, "port": server.port, "kubeconfig": str(args.kubeconfig or "")}
        print(json.dumps(ready), flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakeapi", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    for path in args.crd:
        if not path.is_file():
            parser.error(f"--crd {path}: no such file")
    try:
        return asyncio.run(serve(args))
    except OSError as err:
        print(f"fakeapi: cannot listen on {args.host}:{args.port}: {err.strerror or err}", file=sys.stderr)
        return 1
