"""A user's view of the real cluster for the helpers of tests/e2e/user.py (`Session`): the admin's client, and
the processes of ours the test runs, checked while waiting so a crash shows its log instead of a timeout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.e2e.processes import Process, ProcessError


@dataclass
class RealSession:
    user: Any  # kubernetes.client.ApiClient
    processes: list[Process] = field(default_factory=list)

    def check_processes(self) -> None:
        for process in self.processes:
            if not process.running():
                raise ProcessError(f"{process.name} exited with {process.returncode()}:\n{process.log_tail()}")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.log_tail(60)}" for p in self.processes)
