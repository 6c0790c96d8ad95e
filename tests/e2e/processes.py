"""Processes run for real: ours (`python -m modelbooster <args>`) and, for the real-server tests, the control
plane's binaries (`program=`); output to a log file, stopped by pid.

Each process is started in its own session so that stopping it can never touch anything else; `stop()`
sends SIGTERM (the graceful path the chart relies on), waits, and only then kills.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

# Variables that would send a loopback request through a proxy or change the processes' behaviour.
_DROPPED_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "KUBECONFIG")


class ProcessError(Exception):
    """A process did not start, exited early, or did not become ready; the message carries its log tail."""


def free_port() -> int:
    """A loopback port free right now (the small race with other programs is acceptable in tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_get(url: str, *, timeout: float = 2.0) -> tuple[int, str]:
    """(status, body) of a plain-HTTP GET; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode(errors="replace")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, ""


class Process:
    def __init__(
        self,
        name: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        log_dir: Path,
        program: Sequence[str] | None = None,
    ) -> None:
        self.name = name
        self.args = list(args)
        # What runs `args`: our package's entry point unless a binary is named.
        self.program = list(program) if program is not None else [sys.executable, "-m", "modelbooster"]
        self.log_path = log_dir / f"{name}.log"
        environment = {key: value for key, value in os.environ.items() if key not in _DROPPED_ENV}
        environment.update(env)
        environment["PYTHONUNBUFFERED"] = "1"
        self._env = environment
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._popen is None:
            raise ProcessError(f"{self.name} was never started")
        return self._popen.pid

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self._popen = subprocess.Popen(
                [*self.program, *self.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
            )

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, url: str, *, timeout: float = 20.0) -> None:
        """Poll `url` until it answers 200; fail at once (with the log) if the process exits."""
        deadline = time.monotonic() + timeout
        last = (0, "")
        while time.monotonic() < deadline:
            if not self.running():
                raise ProcessError(f"{self.name} exited with {self.returncode()} before {url} was ready:\n"
                                   f"{self.log_tail()}")  # fmt: skip
            last = http_get(url, timeout=1.0)
            if last[0] == 200:
                return
            time.sleep(0.05)
        raise ProcessError(f"{self.name}: {url} not ready after {timeout}s (last {last}):\n{self.log_tail()}")

    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    def stop(self, *, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait up to `timeout`, then SIGKILL; returns the exit code (negative: killed by signal)."""
        popen = self._popen
        if popen is None:
            return None
        if popen.poll() is None:
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(timeout)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait(5)
        return popen.returncode
