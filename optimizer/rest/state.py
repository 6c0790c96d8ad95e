"""What one optimizer server holds: its mode, its metrics, and in stateful mode the system that clients edit
piece by piece; one lock serialises the edits and the runs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

from optimizer.rest.metrics import OptimizerMetrics
from optimizer.system import System


@dataclass
class OptimizerState:
    stateful: bool
    metrics: OptimizerMetrics
    system: System = field(default_factory=System)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


STATE: Final = web.AppKey("inferno_optimizer_state", OptimizerState)


def state_of(request: web.Request) -> OptimizerState:
    return request.app[STATE]
