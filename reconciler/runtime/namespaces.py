"""Namespaces being deleted: a controller creates nothing in them and reports nothing about them.

When a namespace is deleted, the namespace controller deletes its content kind by kind, so the children of a
ModelBooster may go before the ModelBooster does. Recreating them would be refused (`403 Forbidden`, cause
`NamespaceTerminating`), and so would the Events about it; the ModelBooster would be marked Failed for
something nobody can fix. So a namespace with a `deletionTimestamp` is terminal: no writes, no status, no Events,
one log line.

What is terminating is known from a Namespace informer (one across the cluster, or one per watched namespace
selected by name, as the RBAC grants) and, in case its event comes later than the namespace controller's first
deletions, from the API server's own answer: a create refused with `NamespaceTerminating` marks the namespace
until the informer shows it again without a deletionTimestamp (recreated) or `_REFUSAL_MEMORY` has passed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from reconciler.runtime.client import ApiError
from reconciler.runtime.informer import Informer
from reconciler.runtime.lean import Keep, lean
from reconciler.runtime.objects import meta_text, metadata

logger = logging.getLogger(__name__)

NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"
_REFUSAL_MEMORY: Final = 120.0

NAMESPACE_KEEP: Final[Keep] = {
    "apiVersion": None,
    "kind": None,
    "metadata": {"name": None, "uid": None, "resourceVersion": None, "deletionTimestamp": None},
    "status": {"phase": None},
}


def namespace_transform(obj: dict[str, Any]) -> dict[str, Any]:
    return lean(obj, NAMESPACE_KEEP)


def refused_as_terminating(error: BaseException) -> bool:
    """Whether the API server refused a write because its namespace is being deleted."""
    if not isinstance(error, ApiError) or error.status != 403:
        return False
    causes = (error.body.get("details") or {}).get("causes") or ()
    return any(isinstance(c, dict) and c.get("reason") == NAMESPACE_TERMINATING_CAUSE for c in causes)


class NamespaceLifecycle:
    def __init__(self, informers: Sequence[Informer] = (), *, clock: Callable[[], float] = time.monotonic) -> None:
        self._informers = list(informers)
        self._clock = clock
        # namespace -> (when a write was refused, the resourceVersion the informers showed then)
        self._refused: dict[str, tuple[float, str]] = {}
        self._reported: set[str] = set()

    def _cached(self, namespace: str) -> dict[str, Any] | None:
        for informer in self._informers:
            obj = informer.get("", namespace)
            if obj is not None:
                return obj
        return None

    def terminating(self, namespace: str) -> bool:
        cached = self._cached(namespace)
        meta = metadata(cached)
        if meta.get("deletionTimestamp"):
            return True
        refused = self._refused.get(namespace)
        if refused is not None:
            at, version = refused
            if self._clock() - at <= _REFUSAL_MEMORY and str(meta.get("resourceVersion") or "") == version:
                return True
            del self._refused[namespace]  # expired, or the informer has seen the namespace change since: alive
        self._reported.discard(namespace)
        return False

    def refused(self, namespace: str) -> None:
        """A write in `namespace` was refused because it is being deleted."""
        cached = self._cached(namespace)
        version = meta_text(cached, "resourceVersion")
        self._refused[namespace] = (self._clock(), version)

    def skip(self, namespace: str, what: str) -> None:
        """Log, once per deletion of the namespace, that `what` is left alone."""
        if namespace not in self._reported:
            self._reported.add(namespace)
            logger.info("namespace %s is being deleted: %s left alone (no creates, no status, no events)",
                        namespace, what)  # fmt: skip
