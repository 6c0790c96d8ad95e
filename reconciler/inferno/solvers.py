"""What solves an Optimizer's system (docs/design/inferno.md §8, §9): `EmbeddedSolver` in this process, in a
worker thread; `RemoteSolver` over REST (reconciler.inferno.remote), whose stateful optimizer has every input
change mirrored into it (`mirrors`). Not "backends": a ModelBooster's backend is something else.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final, Protocol

from optimizer.milp import MilpError, MilpUnavailableError
from optimizer.optimize import InvalidSystemError, optimize
from optimizer.system import Allocation, System
from reconciler.inferno.remote import RemoteOptimizer, RemoteOptimizerError

# Reasons of the Optimizer's `Optimized` condition for a run that produced no result.
REASON_INVALID: Final = "InvalidInput"
REASON_UNAVAILABLE: Final = "OptimizerUnavailable"
REASON_FAILED: Final = "OptimizationFailed"
REASON_SOLVER_UNAVAILABLE: Final = "SolverUnavailable"


class RunFailure(Exception):
    """A run that did not produce a result; `reason` is the condition reason, `retryable` whether the same
    input may succeed later."""

    def __init__(self, reason: str, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True)
class Answer:
    allocations: dict[str, Allocation]  # server name -> allocation; a server absent here is unallocated
    how: str  # for messages: "embedded greedy", "remote stateless", ...


class Solver(Protocol):
    @property
    def mirrors(self) -> bool:
        """Whether every input change must be pushed to the optimizer (stateful remote mode)."""

    async def run(self, system: System) -> Answer: ...

    async def mirror(self, system: System) -> None: ...


class EmbeddedSolver:
    mirrors = False

    async def run(self, system: System) -> Answer:
        try:
            # CPU-bound (≈0.5 ms per server and accelerator): off the event loop, so watches, probes and the
            # Lease keep going during a large run.
            solution = await asyncio.to_thread(optimize, system)
        except InvalidSystemError as error:
            raise RunFailure(REASON_INVALID, f"invalid system: {error}", retryable=False) from None
        except MilpUnavailableError as error:
            raise RunFailure(REASON_SOLVER_UNAVAILABLE, str(error), retryable=False) from None
        except MilpError as error:
            raise RunFailure(REASON_FAILED, f"optimization error: {error}", retryable=False) from None
        return Answer(allocations=solution.desired(), how=f"embedded {solution.solver}")

    async def mirror(self, system: System) -> None:
        return None


class RemoteSolver:
    def __init__(self, remote: RemoteOptimizer) -> None:
        self.remote = remote

    @property
    def mirrors(self) -> bool:
        return not self.remote.settings.stateless

    async def run(self, system: System) -> Answer:
        how = f"remote {self.remote.settings.mode}"
        try:
            if self.remote.settings.stateless:
                allocations = await self.remote.optimize_one(system)
            else:
                _, allocations = await self.remote.mirror_and_optimize(system)
        except RemoteOptimizerError as error:
            reason = REASON_UNAVAILABLE if error.retryable else REASON_FAILED
            raise RunFailure(reason, error.message, retryable=error.retryable) from None
        return Answer(allocations=allocations, how=how)

    async def mirror(self, system: System) -> None:
        try:
            await self.remote.mirror(system)
        except RemoteOptimizerError as error:
            raise RunFailure(REASON_UNAVAILABLE, error.message, retryable=error.retryable) from None
