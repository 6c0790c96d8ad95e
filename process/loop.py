"""Choosing the event loop: uvloop when installed (`auto`), the standard one (`asyncio`), or uvloop required."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from process.logs import configure

Runner = Callable[[Coroutine[Any, Any, None]], None]
EventLoop = Literal["auto", "asyncio", "uvloop"]
EVENT_LOOPS: tuple[str, ...] = ("auto", "asyncio", "uvloop")


def event_loop_runner(event_loop: str) -> Runner | None:
    """The function that runs the process's main coroutine; None when uvloop is required but not installed."""
    if event_loop == "asyncio":
        return asyncio.run
    try:
        module = importlib.import_module("uvloop")  # an optional extra: imported only when present
    except ImportError:
        return None if event_loop == "uvloop" else asyncio.run
    runner: Runner = module.run
    return runner


def process_runner(command: str, *, event_loop: str, log_level: str, log_format: str) -> Runner | None:
    """Logging configured and the event loop chosen, as every long-running command starts; None (after saying why
    on stderr) when the loop asked for cannot be had."""
    configure(level=log_level, fmt=log_format)
    runner = event_loop_runner(event_loop)
    if runner is None:
        print(f"modelbooster {command}: --event-loop uvloop requested but uvloop is not installed", file=sys.stderr)
    return runner
