"""What every peer of the process provides (`Peer`), and what the process gives each (`Context`).

A peer is a package `reconciler/<name>/` whose `wiring.py` holds its `register(context, settings)` and its
`PEER`; the process adds every peer's flags, reads every peer's settings and registers every peer on one
`Context`, the same way for all (docs/design/structure.md §2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

from reconciler.api.kinds import OUR_GROUPS
from reconciler.runtime.client import KubeClient
from reconciler.runtime.discovery import CrdDiscovery
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.kinds import Kind
from reconciler.runtime.manager import Manager
from reconciler.settings import ProcessSettings

S = TypeVar("S")
R = TypeVar("R")

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Context:
    """The process's shared parts, handed to each peer's `register`."""

    manager: Manager
    client: KubeClient
    settings: ProcessSettings
    # What the cluster serves of custom resources (one CRD watch for the whole process).
    discovery: CrdDiscovery
    recorder: EventRecorder
    version: str
    clock: Clock = utc_now

    def kinds_in_use(self) -> frozenset[Kind]:
        """The kinds the registered peers watch: through an informer of the manager, or through the CRD watch
        while their CRD is served (reconciler/runtime/kind_informers.py)."""
        return frozenset(informer.kind for informer in self.manager.informers) | self.discovery.followed


def new_context(manager: Manager, settings: ProcessSettings, *, version: str, clock: Clock = utc_now) -> Context:
    """The shared parts around `manager`: one CRD watch over our API groups and one Event recorder."""
    return Context(
        manager=manager,
        client=manager.client,
        settings=settings,
        discovery=CrdDiscovery(manager, groups=OUR_GROUPS),
        recorder=EventRecorder(manager.client, instance=settings.identity, metrics=manager.metrics),
        version=version,
        clock=clock,
    )


@dataclass(frozen=True)
class Peer(Generic[S, R]):
    name: str
    # Its settings when the process is given none for it (tests that build the process with some peers).
    default_settings: Callable[[], S]
    add_arguments: Callable[[argparse.ArgumentParser, Mapping[str, str]], None]
    settings_from_args: Callable[[argparse.Namespace, Mapping[str, str]], S]
    # Registers the peer's informers, controllers and runnables on `context.manager`; returns what tests may
    # hold on to (the reconciler, the duty), or None when the settings turn the peer off.
    register: Callable[[Context, S], R]
