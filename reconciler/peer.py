"""What every controller package of the process provides, and what the process gives each (the shape that
makes the controllers peers).

A controller package (`reconciler/<name>/`) has the same rooms in each: `kinds.py` (what it reads and writes),
`settings.py` (its flags, with the process's environment prefix), `controller.py` (its reconcile and its
`register`), `metrics.py` (its own series). Its `__init__.py` exposes one `Peer`: the process adds every peer's
flags, reads every peer's settings, and registers every peer on one `Context`, in the same way for all.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from reconciler.runtime.client import KubeClient
from reconciler.runtime.discovery import CrdDiscovery
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.manager import Manager
from reconciler.settings import ProcessSettings

S = TypeVar("S")


@dataclass(frozen=True)
class Context:
    """The process's shared parts, handed to each controller's `register`."""

    manager: Manager
    client: KubeClient
    settings: ProcessSettings
    # What the cluster serves of custom resources (one CRD watch for the whole process).
    discovery: CrdDiscovery
    recorder: EventRecorder
    version: str


@dataclass(frozen=True)
class Peer(Generic[S]):
    name: str
    add_arguments: Callable[[argparse.ArgumentParser, Mapping[str, str]], None]
    settings_from_args: Callable[[argparse.Namespace, Mapping[str, str]], S]
    # Registers the controller's informers, controllers and leader tasks on `context.manager`; returns what tests
    # and the assembly may hold on to (the reconciler, the duty), or None when the settings disable it.
    register: Callable[[Context, S], Any]
