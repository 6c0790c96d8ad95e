"""One run of the tier: the rig started clean, the checkout's image built into it, the chart installed; and,
whatever happens, the rig stopped at the end (`node_session`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.node.release import Release
from tests.node.rig import Rig
from tests.node.scenarios import Stage

IMAGE: Final = "modelbooster:node-tier"


@dataclass
class Timings:
    start: float = 0.0
    build: float = 0.0
    install: float = 0.0
    stop: float = 0.0


@contextlib.contextmanager
def node_session(*, kit: Path, checkout: Path, image: str = IMAGE, timings: Timings | None = None) -> Iterator[Stage]:
    timings = timings if timings is not None else Timings()
    rig = Rig(kit)
    try:
        clock = time.monotonic()
        rig.start()
        timings.start = time.monotonic() - clock
        clock = time.monotonic()
        rig.build_image(checkout, image)
        timings.build = time.monotonic() - clock
        api = rig.api()
        release = Release(chart=checkout / "charts" / "modelbooster", image=image, kubeconfig=rig.kubeconfig, api=api)
        clock = time.monotonic()
        release.install()
        release.wait_healthy()
        timings.install = time.monotonic() - clock
        yield Stage(rig=rig, release=release, api=api)
    finally:
        clock = time.monotonic()
        rig.stop()
        timings.stop = time.monotonic() - clock
