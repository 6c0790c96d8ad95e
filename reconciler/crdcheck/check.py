"""The CRD check, a runnable on every replica: does the cluster serve the CRDs this version of modelbooster
generates? (docs/design/upgrades.md §4)

Helm never upgrades a chart's CRDs, and an older CRD prunes fields this version writes and refuses objects it
accepts with nothing else saying why. So each of our CRDs in use is judged by its digest annotation once the CRD
watch has listed and on every change: `modelbooster_crd_outdated{crd}`, and a Warning log and Event when one
becomes outdated. A warning, not an outage: readiness does not depend on it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Final

from reconciler.crdcheck.kinds import CRD
from reconciler.crdcheck.metrics import CrdCheckMetrics
from reconciler.runtime.discovery import CrdDiscovery, ServedCrd
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.objects import metadata
from shared.crd_digest import CrdJudgement, judge, outdated_message, recorded_chart_directories

logger = logging.getLogger(__name__)

EVENT_REASON: Final = "CRDOutdated"


class CrdCheck:
    """Judges our CRDs as the served ones change; see the module docstring."""

    def __init__(
        self,
        served: CrdDiscovery,
        *,
        expected: Callable[[], Mapping[str, str]],
        metrics: CrdCheckMetrics,
        recorder: EventRecorder,
        version: str,
    ) -> None:
        self.served = served
        self._expected = expected
        self.expected: dict[str, str] = {}
        self.recorder = recorder
        self.version = version
        self.metrics = metrics
        self.judgements: dict[str, CrdJudgement] = {}
        self._directories = recorded_chart_directories()
        self._started = False
        self._tasks: set[asyncio.Task[None]] = set()
        served.subscribe(self._on_change)

    async def run(self) -> None:
        """Judge every CRD once the CRD watch has listed; later changes arrive through the subscription. Which
        CRDs count is asked now, when every peer has registered what it watches."""
        await self.served.wait_synced()
        self.expected = dict(self._expected())
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

