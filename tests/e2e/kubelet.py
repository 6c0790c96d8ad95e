"""The kubelet's part of running a rendered pod as a local process: env, volumes, ports.

A pod on a node gets its Secret volumes projected by the kubelet (files behind a `..data` symlink that is
swapped atomically on change), its downward-API env vars resolved, and its named container ports reached
through a Service. The e2e harness does the same for the webhook and reconciler containers the chart
renders, so the processes run with the chart's own command lines and read what the chart mounts.

`SecretVolume` keeps a directory in step with one Secret of the fake API server. It reads the fake's store
directly (not over HTTP): the kubelet is not one of the processes whose requests the RBAC test attributes.
"""

from __future__ import annotations

import base64
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
DATA_LINK = "..data"


class KubeletError(Exception):
    """A pod spec the harness cannot run (an env source or volume kind it does not emulate)."""


def container(deployment: Mapping[str, Any], name: str) -> Obj:
    for spec in deployment["spec"]["template"]["spec"]["containers"]:
        if spec["name"] == name:
            return dict(spec)
    raise KubeletError(f"no container {name!r} in Deployment {deployment['metadata']['name']}")


def resolve_env(spec: Mapping[str, Any], *, pod_name: str, namespace: str) -> dict[str, str]:
    """The container's `env` as the kubelet sets it: literal values and the downward-API fields we use."""
    fields = {"metadata.name": pod_name, "metadata.namespace": namespace}
    resolved: dict[str, str] = {}
    for variable in spec.get("env") or ():
        name = variable["name"]
        if "value" in variable:
            resolved[name] = str(variable["value"])
            continue
        source = variable.get("valueFrom") or {}
        path = (source.get("fieldRef") or {}).get("fieldPath")
        if path not in fields:
            raise KubeletError(f"env {name}: only literal values and {sorted(fields)} are emulated, got {source}")
        resolved[name] = fields[path]
    return resolved


def secret_mounts(deployment: Mapping[str, Any], container_name: str) -> dict[str, str]:
    """mountPath -> Secret name for every Secret volume the container mounts."""
    pod = deployment["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod.get("volumes") or ()}
    mounts: dict[str, str] = {}
    for mount in container(deployment, container_name).get("volumeMounts") or ():
        volume = volumes.get(mount["name"])
        if volume is None:
            raise KubeletError(f"volumeMount {mount['name']!r} has no volume")
        if "secret" in volume:
            mounts[mount["mountPath"]] = volume["secret"]["secretName"]
    return mounts


def remap_paths(args: Sequence[str], mounts: Mapping[str, Path]) -> list[str]:
    """Rewrite `--flag=<mountPath>/file` arguments to the local directory that projects that mount."""
    rewritten = []
    for arg in args:
        flag, eq, value = arg.partition("=")
        moved = arg
        for mount_path, local in mounts.items():
            prefix = mount_path.rstrip("/") + "/"
            if eq and value.startswith(prefix):
                moved = f"{flag}={local / value.removeprefix(prefix)}"
        rewritten.append(moved)
    return rewritten


def override_flags(args: Sequence[str], overrides: Mapping[str, str | None]) -> list[str]:
    """Replace `--flag=value` entries (appending flags that are absent); a None value drops the flag."""
    result: list[str] = []
    seen: set[str] = set()
    for arg in args:
        flag = arg.partition("=")[0]
        if flag in overrides:
            seen.add(flag)
            value = overrides[flag]
            if value is not None:
                result.append(f"{flag}={value}")
        else:
            result.append(arg)
    result.extend(f"{flag}={value}" for flag, value in overrides.items() if flag not in seen and value is not None)
    return result


class SecretVolume:
    """A Secret volume: `<dir>/<key>` -> `..data/<key>` -> `..<generation>/<key>`, swapped atomically.

    `optional: true` semantics: while the Secret does not exist the directory stays empty (the pod starts
    anyway). Every change of the Secret's data is written to a fresh generation directory, then `..data` is
    renamed onto a link to it in one step, so a reader never sees half a certificate and half a key from
    different generations through the same `..data`.
    """

    def __init__(self, directory: Path, read_secret: Callable[[], Obj | None], *, period: float = 0.05) -> None:
        self.directory = directory
        self._read = read_secret
        self._period = period
        self._data: dict[str, bytes] | None = None
        self._generation = 0
        self._stop = threading.Event()
        self._held = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.syncs = 0  # projections written (1 = the first one)
        directory.mkdir(parents=True, exist_ok=True)

    def sync(self) -> bool:
        """Project the Secret now if it changed; True when files were (re)written."""
        secret = self._read()
        if secret is None:
            return False
        data = {key: base64.b64decode(value) for key, value in (secret.get("data") or {}).items()}
        if data == self._data:
            return False
        self._project(data)
        self._data = data
        self.syncs += 1
        return True

    def _project(self, data: Mapping[str, bytes]) -> None:
        self._generation += 1
        stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{os.getpid()}.{self._generation}"
        generation = self.directory / stamp
        generation.mkdir()
        for key, value in data.items():
            (generation / key).write_bytes(value)
            (generation / key).chmod(0o440)
        staging = self.directory / "..data_tmp"
        with contextlib.suppress(FileNotFoundError):
            staging.unlink()
        staging.symlink_to(stamp)
        previous = os.readlink(self.directory / DATA_LINK) if (self.directory / DATA_LINK).is_symlink() else None
        os.replace(staging, self.directory / DATA_LINK)  # the atomic swap
        for key in data:
            link = self.directory / key
            if not link.is_symlink():
                link.symlink_to(f"{DATA_LINK}/{key}")
        if previous is not None and previous != stamp:
            for old in (self.directory / previous).iterdir():
                old.unlink()
            (self.directory / previous).rmdir()

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self._period):
                if self._held.is_set():
                    continue
                try:
                    self.sync()
                except BaseException as error:  # reported by check(); a dead sync loop must not hide
                    self._error = error
                    return

        self._thread = threading.Thread(target=loop, name=f"kubelet-{self.directory.name}", daemon=True)
        self._thread.start()

    @contextmanager
    def held(self) -> Iterator[None]:
        """No sync while inside: a real kubelet takes up to a minute or two to project a changed Secret, and
        everything the Secret's writer does must keep admission working during that lag."""
        self._held.set()
        try:
            yield
        finally:
            self._held.clear()

    def check(self) -> None:
        if self._error is not None:
            raise KubeletError(f"secret volume {self.directory} stopped syncing: {self._error!r}")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
