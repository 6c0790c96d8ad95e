"""The real single node beside the project (`../shared/node`, its README): start, stop, build the image, and the
node-level disruptions the lifecycle scenarios need (stop the kubelet, freeze a container's process).

Everything here runs the rig's own scripts by path; processes are signalled by the pid the rig or the container
runtime records, never by name.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tests.node.api import Api, Credentials

# The folder holding the rig's `setup` and `build-image` (../shared/node beside the checkout). Opt-in: on a
# machine where the rig exists, a plain `pytest` run must not start a cluster (only one rig can run at a time).
RIG_VARIABLE: Final = "MODELBOOSTER_NODE_RIG"
# The kubelet re-reads Secret volumes at each pod resync (default 1m): a webhook pod then waits up to a minute
# for its first certificate. 10 s keeps the first install short; nothing in the scenarios depends on it.
KUBELET_SYNC_FREQUENCY: Final = "10s"
SCRIPT_TIMEOUT: Final = 300.0
BUILD_TIMEOUT: Final = 900.0
# Addresses the tier may reach: the node (API server), the pod and Service ranges (rig.env's defaults).
NODE_IP: Final = "172.30.255.1"
NODE_NAME: Final = "modelbooster-node"
# The bridge build-image's own dockerd uses while it runs (../shared/node/README.md).
BUILD_BRIDGE: Final = "mbdocker0"
RIG_NETWORKS: Final = ("172.30.255.0/24", "10.244.0.0/16", "10.97.0.0/16")


class RigError(Exception):
    """A rig script failed; the message carries its output's tail."""


def _tail(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


@dataclass
class Rig:
    kit: Path  # ../shared/node: setup, build-image, scripts/
    folder: Path = field(init=False)  # what `setup` printed: the rig's scripts, PKI, kubeconfig, logs
    node_name: str = NODE_NAME

    def __post_init__(self) -> None:
        self.folder = Path(self._run([str(self.kit / "setup")], timeout=SCRIPT_TIMEOUT).strip().splitlines()[-1])

    # ------------------------------------------------------------------ scripts
    def _env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.lower().endswith("_proxy")}
        env["KUBELET_SYNC_FREQUENCY"] = KUBELET_SYNC_FREQUENCY
        return env

    def _run(self, command: list[str], *, timeout: float) -> str:
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, env=self._env(), check=False
            )
        except subprocess.TimeoutExpired as error:
            raise RigError(f"{command[0]} did not finish within {timeout:.0f} s") from error
        if done.returncode != 0:
            raise RigError(f"{' '.join(command)} exited {done.returncode}: {_tail(done.stdout + done.stderr)}")
        return done.stdout

    def script(self, name: str, *args: str, timeout: float = SCRIPT_TIMEOUT) -> str:
        return self._run([str(self.folder / name), *args], timeout=timeout)

    def running(self) -> bool:
        """Whether any process the rig recorded is alive (someone else's rig, or one left behind)."""
        pids = self.folder / "pids"
        for record in pids.glob("*.pid") if pids.is_dir() else ():
            text = record.read_text().strip()
            if text.isdigit() and _alive(int(text)):
                return True
        return False

    def start(self) -> None:
        """A clean cluster: wipe the previous data, then start everything and wait for the node to be Ready."""
        self.script("reset.sh")
        self.script("start-all.sh")

    def stop(self) -> None:
        self.script("stop-all.sh")

    def build_image(self, checkout: Path, image: str) -> str:
        """The checkout's Dockerfile built into the node's containerd; the reference the kubelet finds.

        build-image sometimes exits 1 after a good build, when deleting its bridge fails in its exit trap, and
        then leaves the bridge behind, with which every later run fails ("Address already assigned"). So a
        bridge left by an earlier run is removed first, and a failed build is tried once more."""
        for attempt in (1, 2):
            self._remove_left_build_bridge()
            try:
                out = self._run([str(self.kit / "build-image"), str(checkout), image], timeout=BUILD_TIMEOUT)
            except RigError:
                if attempt == 2:
                    raise
                continue
            return out.strip().splitlines()[-1]
        raise AssertionError("unreachable")

    def _remove_left_build_bridge(self) -> None:
        """build-image's bridge, when no build-image runs (it holds its lock while it does)."""
        if not Path(f"/sys/class/net/{BUILD_BRIDGE}").exists():
            return
        lock = self.folder.parent / "image-build" / ".lock"
        subprocess.run(["flock", "-n", str(lock), "ip", "link", "del", BUILD_BRIDGE], capture_output=True,
                       timeout=30, check=False)  # fmt: skip

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    def api(self) -> Api:
        return Api(Credentials.of_rig(self.folder, server=f"https://{NODE_IP}:26443"))

    # ------------------------------------------------------------------ disruptions
    def stop_kubelet(self) -> None:
        """SIGTERM to the kubelet (by its recorded pid): the node stops reporting, its containers keep running."""
        self._run(["bash", "-c", 'RIG="$0"; . "$RIG/rig.env"; . "$RIG/lib.sh"; stop_one kubelet', str(self.folder)],
                  timeout=SCRIPT_TIMEOUT)  # fmt: skip

    def start_kubelet(self) -> None:
        self.script("start-kubelet.sh")

    def container_pid(self, *, pod: str, namespace: str, container: str) -> int:
        """The host pid of a running container's first process, from the container runtime."""
        crictl = str(self.folder / "bin" / "crictl")
        runtime = f"unix://{self.folder}/run/containerd/containerd.sock"
        ids = self._run(
            [crictl, "--runtime-endpoint", runtime, "ps", "-q", "--name", f"^{re.escape(container)}$",
             "--label", f"io.kubernetes.pod.name={pod}", "--label", f"io.kubernetes.pod.namespace={namespace}"],
            timeout=30,
        ).split()  # fmt: skip
        if len(ids) != 1:
            raise RigError(f"expected one running container {container} in {namespace}/{pod}, found {ids}")
        info = self._run([crictl, "--runtime-endpoint", runtime, "inspect", "-o", "go-template",
                          "--template", "{{.info.pid}}", ids[0]], timeout=30)  # fmt: skip
        return int(info.strip())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def freeze(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)


def thaw(pid: int) -> None:
    # The kubelet may have killed it meanwhile, for its failed liveness probe.
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


def usable(kit: Path) -> str | None:
    """Why the rig at `kit` cannot be used by this process, or None."""
    if not (kit / "setup").is_file() or not (kit / "build-image").is_file():
        return f"{kit} holds no rig (setup and build-image are missing)"
    if os.geteuid() != 0:
        return "the real node needs root (kubelet, containerd, iptables)"
    if shutil.which("bash") is None:
        return "bash is missing"
    return None
