"""Fault injection: make chosen requests fail, hang or lose their connection.

Rules match on verb (get, list, watch, create, update, patch, delete, deletecollection), resource
(plural, optionally `plural/subresource`), namespace, name and/or a regular expression searched in the
path. Every rule has a budget (`count`, None = forever). Rules are set from the test's thread while the
server runs in its own, so access is locked.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Final

REASONS: Final = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(frozen=True)
class RequestFacts:
    verb: str
    resource: str  # plural, or plural/subresource
    namespace: str
    name: str
    path: str


@dataclass
class FaultRule:
    action: str  # "fail", "delay" or "reset"
    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    path: str | None = None
    status: int = 500
    reason: str = ""
    message: str = "injected fault"
    retry_after: int | None = None
    seconds: float = 0.0
    remaining: int | None = 1
    hits: int = 0
    _pattern: re.Pattern[str] | None = field(default=None, repr=False)

    def matches(self, facts: RequestFacts) -> bool:
        if self.verb is not None and self.verb != facts.verb:
            return False
        if self.resource is not None and self.resource != facts.resource:
            return False
        if self.namespace is not None and self.namespace != facts.namespace:
            return False
        if self.name is not None and self.name != facts.name:
            return False
        if self.path is not None:
            if self._pattern is None:
                self._pattern = re.compile(self.path)
            if not self._pattern.search(facts.path):
                return False
        return True


class Faults:
    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def _add(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def fail_next(
        self,
        count: int | None = 1,
        *,
        status: int = 500,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        path: str | None = None,
        reason: str | None = None,
        message: str = "injected fault",
        retry_after: int | None = None,
    ) -> FaultRule:
        """Answer the next `count` matching requests with a Status of `status` (None: all of them)."""
        return self._add(
            FaultRule(
                "fail",
                verb=verb,
                resource=resource,
                namespace=namespace,
                name=name,
                path=path,
                status=status,
                reason=reason if reason is not None else REASONS.get(status, ""),
                message=message,
                retry_after=retry_after,
                remaining=count,
            )
        )

    def delay(
        self,
        seconds: float,
        *,
        count: int | None = None,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> FaultRule:
        """Hold matching requests for `seconds` before serving them."""
        return self._add(
            FaultRule(
                "delay",
                verb=verb,
                resource=resource,
                namespace=namespace,
                name=name,
                path=path,
                seconds=seconds,
                remaining=count,
            )
        )

    def reset_next(
        self,
        count: int | None = 1,
        *,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> FaultRule:
        """Drop the connection of matching requests without answering."""
        return self._add(
            FaultRule("reset", verb=verb, resource=resource, namespace=namespace, name=name, path=path, remaining=count)
        )

    def remove(self, rule: FaultRule) -> None:
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def take(self, facts: RequestFacts) -> list[FaultRule]:
        """Matching rules for a request (consuming their budgets): delays first, then one fail/reset."""
        chosen: list[FaultRule] = []
        with self._lock:
            terminal_taken = False
            for rule in list(self._rules):
                if not rule.matches(facts):
                    continue
                if rule.action != "delay":
                    if terminal_taken:
                        continue
                    terminal_taken = True
                rule.hits += 1
                chosen.append(rule)
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
        chosen.sort(key=lambda r: r.action != "delay")
        return chosen
