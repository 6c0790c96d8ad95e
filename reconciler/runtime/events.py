"""Kubernetes Events (core/v1) about the objects a controller reconciles.

`kubectl describe modelbooster x` shows them. Rules we follow (docs/design/reconciler.md §9):
- `type` Normal or Warning, `reason` CamelCase (Created, Updated, Deleted, InvalidSpec, ApplyFailed, ...);
- short messages (truncated to 1024 characters);
- `source.component`/`reportingComponent` and `involvedObject` set;
- repeats are aggregated: the same (object, type, reason, message) bumps `count` and `lastTimestamp` of the
  event already posted instead of creating a new one (an in-memory LRU remembers what was posted);
- posting is best effort: a failure never fails a reconcile. During an outage every post fails, so failures
  are counted (`modelbooster_event_post_failures_total{reason}`) and logged once per run of failures, with
  one more line when posting works again (runtime/outage.py); a post refused because the namespace is being
  deleted is only counted.
"""

from __future__ import annotations

import logging
import socket
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from reconciler.runtime.client import ApiError, KubeClient
from reconciler.runtime.kinds import EVENT
from reconciler.runtime.metrics import Metrics
from reconciler.runtime.namespaces import refused_as_terminating
from reconciler.runtime.objects import metadata
from reconciler.runtime.outage import OutageLog, is_outage

logger = logging.getLogger(__name__)

EventKind = Literal["Normal", "Warning"]
MAX_MESSAGE = 1024


@dataclass
class _Posted:
    namespace: str
    name: str
    count: int


def _timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def truncate(message: str, limit: int = MAX_MESSAGE) -> str:
    if len(message) <= limit:
        return message
    half = (limit - 3) // 2
    return f"{message[:half]}...{message[-(limit - 3 - half):]}"


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        *,
        component: str = "modelbooster-reconciler",
        instance: str | None = None,
        cache_size: int = 4096,
        metrics: Metrics | None = None,
    ) -> None:
        self.client = client
        self._metrics = metrics
        self._outage = OutageLog(logger, "posting events")
        self.component = component
        self.instance = instance or socket.gethostname()
        self._cache_size = cache_size
        self._posted: OrderedDict[tuple[str, str, str, str], _Posted] = OrderedDict()

    async def emit(self, involved: dict[str, Any], *, type: EventKind, reason: str, message: str) -> None:
        meta = metadata(involved)
        if involved.get("kind") == "Event":
            return  # never events about events
        namespace = str(meta.get("namespace") or "default")
        message = truncate(message)
        key = (str(meta.get("uid") or ""), type, reason, message)
        posted = self._posted.get(key)
        try:
            if posted is not None:
                self._posted.move_to_end(key)
                if await self._bump(posted):
                    return
            await self._create(involved, key=key, namespace=namespace, type=type, reason=reason, message=message)
        except ApiError as error:
            self._failed(error, f"{reason} on {namespace}/{meta.get('name')}")
        else:
            self._outage.succeeded()

    def _failed(self, error: ApiError, what: str) -> None:
        if refused_as_terminating(error):
            self._count("namespace_terminating")
            return
        self._count("unavailable" if is_outage(error) else "refused")
        self._outage.failed(error, detail=what)

    def _count(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.event_post_failures.labels(reason=reason).inc()

    async def _bump(self, posted: _Posted) -> bool:
        try:
            await self.client.patch(
                EVENT, posted.namespace, posted.name, {"count": posted.count + 1, "lastTimestamp": _timestamp()}
            )
        except ApiError as error:
            if error.not_found:
                return False  # expired (events have a TTL): post a fresh one
            raise
        posted.count += 1
        return True

    async def _create(
        self,
        involved: dict[str, Any],
        *,
        key: tuple[str, str, str, str],
        namespace: str,
        type: EventKind,
        reason: str,
        message: str,
    ) -> None:
        meta = metadata(involved)
        now = _timestamp()
        name = f"{meta.get('name')}.{time.time_ns():x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion"),
                "kind": involved.get("kind"),
                "name": meta.get("name"),
                # A cluster-scoped object (a CRD) has none: its Events live in `default`, as kube-apiserver
                # requires, and `kubectl describe` finds them by an empty involvedObject.namespace.
                **({"namespace": namespace} if meta.get("namespace") else {}),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": type,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": self.component, "host": self.instance},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
        }
        await self.client.create(EVENT, body)
        self._posted[key] = _Posted(namespace=namespace, name=name, count=1)
        while len(self._posted) > self._cache_size:
            self._posted.popitem(last=False)

    def forget(self, uid: str) -> None:
        """The object is gone: drop what we remember about its events."""
        for key in [key for key in self._posted if key[0] == uid]:
            del self._posted[key]
