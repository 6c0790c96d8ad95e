"""Who may let an Inferno Server set a workload's replicas (docs/design/inferno.md §18).

`inferno.platform.ai/scaled-by: "<server>[,<server>...]"` names the Servers, in the workload's namespace,
whose Scale actuation may set its `/scale`. It goes on the workload itself (a Deployment, a StatefulSet, a
ModelServing nobody controls, any kind with `/scale`), or, for a ModelServing a ModelBooster controls, on the
ModelBooster (with its `modelbooster.io/external-replicas: "true"`): whoever can write that annotation can
update the object, so could set its replicas anyway — the annotation hands nobody a right they lacked.

The value is read leniently (spaces around names ignored, empty items skipped) but bounded: at most
`MAX_SERVERS` names of at most `MAX_NAME` characters; anything beyond, or not a Kubernetes object name,
names no Server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

ANNOTATION_SCALED_BY: Final = "inferno.platform.ai/scaled-by"
MAX_SERVERS: Final = 16
MAX_NAME: Final = 253
_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def servers_named(annotations: Mapping[str, object] | None) -> frozenset[str]:
    """The Server names the annotation lists (empty when absent or unusable)."""
    value = (annotations or {}).get(ANNOTATION_SCALED_BY)
    if not isinstance(value, str):
        return frozenset()
    names = [name.strip() for name in value.split(",", MAX_SERVERS + 1)[:MAX_SERVERS]]
    return frozenset(name for name in names if len(name) <= MAX_NAME and _NAME.fullmatch(name))


def consent_hint(server: str, *, on: str, named: frozenset[str] = frozenset()) -> str:
    """How to give consent (keeping the Servers already `named`), for a refusal's message."""
    value = ",".join(sorted(named | {server}))
    return f"annotate {on} {ANNOTATION_SCALED_BY}: \"{value}\" to let Server {server} scale it"
