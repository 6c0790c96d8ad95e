"""The CRD check as a peer of the process: a runnable on every replica, judging the CRDs of the kinds in use."""

from __future__ import annotations

from typing import Final

from reconciler.crdcheck.check import CrdCheck
from reconciler.crdcheck.metrics import CrdCheckMetrics
from reconciler.crdcheck.settings import CrdCheckSettings, add_crd_check_arguments, crd_check_settings_from_args
from reconciler.peer import Context, Peer
from reconciler.runtime.schema_fit import crd_name
from shared.crd_digest import recorded_digests


def register(context: Context, settings: CrdCheckSettings) -> CrdCheck:
    """Judge our CRDs on every replica from start to shutdown (the metric is every replica's): those of the
    kinds the registered peers watch, as the process knows them once it runs."""

    def expected() -> dict[str, str]:
        in_use = {crd_name(kind) for kind in context.kinds_in_use()}
        recorded = recorded_digests(include_children=settings.check_children)
        return {name: digest for name, digest in recorded.items() if name in in_use}

    check = CrdCheck(
        context.discovery,
        expected=expected,
        metrics=CrdCheckMetrics(context.manager.metrics.registry),
        recorder=context.recorder,
        version=context.version,
    )
    context.manager.add_background(check.run)
    return check


PEER: Final = Peer(
    name="crdcheck", default_settings=CrdCheckSettings, add_arguments=add_crd_check_arguments,
    settings_from_args=crd_check_settings_from_args, register=register,
)  # fmt: skip
