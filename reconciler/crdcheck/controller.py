"""The CRD check: does the cluster serve the CRDs this version of modelbooster generates? (docs/design/upgrades.md §4)

Helm never upgrades a chart's CRDs, so after `helm upgrade` the cluster keeps the CRDs of the first install
until an operator applies the new ones (docs/chart.md, "Upgrades"). An older CRD prunes fields this version
writes and refuses objects this version accepts, and nothing else would say why. So, on every replica, once the
CRD watch (reconciler/runtime/discovery.py) has listed and again on every change of one of our CRDs, each CRD is
judged by the digest annotation it carries (shared/crd_digest.py) and:

- `modelbooster_crd_outdated{crd}` is 1 for an outdated CRD and 0 for a current or absent one (the chart's
  `ModelBoosterCRDOutdated` alert fires on it);
- a CRD that becomes outdated (or is outdated at start) is logged as a Warning and gets a Warning Event
  (`CRDOutdated`, in `default`, where Events about cluster-scoped objects live, so `kubectl describe crd`
  shows it); one that becomes current again is logged at info.

It is a warning, not an outage: readiness does not depend on it, and reconciling goes on with what the
served schema allows (the ModelBooster controller reports the fields a served schema would prune).
The child kinds are judged only when the chart installs them (`--check-child-crds`, off when Kthena provides
its own child CRDs, which carry no digest of ours), Inferno's only while the Inferno controller runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Mapping
from typing import Final

from reconciler.crdcheck.kinds import CRD
from reconciler.crdcheck.metrics import CrdCheckMetrics
from reconciler.crdcheck.settings import CrdCheckSettings, add_crd_check_arguments, crd_check_settings_from_args
from reconciler.peer import Context, Peer
from reconciler.runtime.discovery import CrdDiscovery, ServedCrd
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.manager import Manager
from reconciler.runtime.objects import metadata
from shared.crd_digest import (
    CrdJudgement,
    judge,
    outdated_message,
    recorded_chart_directories,
    recorded_digests,
)

logger = logging.getLogger(__name__)

EVENT_REASON: Final = "CRDOutdated"


class CrdCheck:
    """Judges our CRDs as the served ones change; see the module docstring."""

    def __init__(
        self,
        served: CrdDiscovery,
        *,
        expected: Mapping[str, str],
        metrics: CrdCheckMetrics,
        recorder: EventRecorder,
        version: str,
    ) -> None:
        self.served = served
        self.expected = dict(expected)
        self.recorder = recorder
        self.version = version
        self.metrics = metrics
        self.judgements: dict[str, CrdJudgement] = {}
        self._directories = recorded_chart_directories()
        self._started = False
        self._tasks: set[asyncio.Task[None]] = set()
        served.subscribe(self._on_change)

    async def run(self) -> None:
        """Judge every CRD once the CRD watch has listed; later changes arrive through the subscription."""
        await self.served.wait_synced()
        self._started = True
        for name in self.expected:
            self._judge(name)

    def _on_change(self, old: ServedCrd | None, new: ServedCrd | None) -> None:
        changed = new if new is not None else old
        if self._started and changed is not None and changed.name in self.expected:
            self._judge(changed.name)

    def _judge(self, name: str) -> None:
        crd = self.served.crds().get(name)
        judgement = judge(
            name, expected=self.expected[name], served_annotations=None if crd is None else crd.annotations
        )
        before = self.judgements.get(name)
        self.judgements[name] = judgement
        self.metrics.outdated.labels(crd=name).set(1 if judgement.outdated else 0)
        if judgement.outdated and (before is None or before != judgement):
            message = outdated_message(
                judgement, version=self.version, chart_directory=self._directories.get(name, "crds")
            )
            logger.warning(message)
            if crd is not None:
                self._post_event(crd, message)
        elif before is not None and before.outdated and not judgement.outdated:
            logger.info("CustomResourceDefinition %s is %s now", name, judgement.verdict)

    def _post_event(self, crd: ServedCrd, message: str) -> None:
        meta = metadata(crd.raw)
        involved = {
            "apiVersion": CRD.api_version,
            "kind": CRD.kind,
            "metadata": {key: meta.get(key) for key in ("name", "uid", "resourceVersion")},
        }
        task = asyncio.get_running_loop().create_task(
            self.recorder.emit(involved, type="Warning", reason=EVENT_REASON, message=message)
        )
        self._tasks.add(task)  # keep a reference until done (the loop holds tasks weakly)
        task.add_done_callback(self._tasks.discard)


def register_crd_check(
    manager: Manager,
    served: CrdDiscovery,
    *,
    settings: CrdCheckSettings,
    recorder: EventRecorder,
    version: str,
) -> CrdCheck:
    """Judge our CRDs on every replica from start to shutdown (the metric is every replica's)."""
    check = CrdCheck(
        served,
        expected=recorded_digests(include_children=settings.check_children, include_inferno=settings.check_inferno),
        metrics=CrdCheckMetrics(manager.metrics.registry),
        recorder=recorder,
        version=version,
    )
    manager.add_background(check.run)
    return check


def register(context: Context, settings: CrdCheckSettings) -> CrdCheck:
    """The peer's registration: the check on the process's manager, CRD watch and Event recorder."""
    return register_crd_check(
        context.manager, context.discovery, settings=settings, recorder=context.recorder, version=context.version
    )


def _add_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    add_crd_check_arguments(parser, environ=environ)


def _settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> CrdCheckSettings:
    # `check_inferno` stays at its default: the process sets it from the Inferno controller's settings.
    return crd_check_settings_from_args(args)


PEER: Final = Peer(
    name="crdcheck", add_arguments=_add_arguments, settings_from_args=_settings_from_args, register=register
)
