"""A record of every request the fake served, so tests can assert what a client did (e.g. no writes)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

WRITE_VERBS: Final = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    verb: str  # get, list, watch, create, update, patch, delete, deletecollection, or "" (discovery etc.)
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    content_type: str
    user_agent: str
    status: int
    body: Any = field(default=None, compare=False)

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS


class RequestLog:
    def __init__(self) -> None:
        self._entries: list[LoggedRequest] = []
        self._lock = threading.Lock()

    def add(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def matching(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        group: str | None = None,
    ) -> list[LoggedRequest]:
        return [
            e
            for e in self.entries()
            if (verb is None or e.verb == verb)
            and (resource is None or e.resource == resource)
            and (namespace is None or e.namespace == namespace)
            and (name is None or e.name == name)
            and (subresource is None or e.subresource == subresource)
            and (group is None or e.group == group)
        ]

    def count(self, **criteria: str | None) -> int:
        return len(self.matching(**criteria))

    def writes(self) -> list[LoggedRequest]:
        return [e for e in self.entries() if e.is_write]

    def verbs(self) -> Counter[str]:
        """Requests per verb, e.g. `log.verbs()["patch"]`."""
        return Counter(e.verb for e in self.entries() if e.verb)
