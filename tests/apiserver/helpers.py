"""Small helpers for the fake API server's tests."""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client import ApiException


def status_of(err: ApiException) -> dict[str, Any]:
    """The Status body of a failed call."""
    body: dict[str, Any] = json.loads(err.body or "{}")
    return body


def message_of(err: ApiException) -> str:
    return str(status_of(err).get("message", ""))


def new_watch() -> Any:
    """A `kubernetes.watch.Watch` (the module is untyped)."""
    from kubernetes import watch

    return watch.Watch()  # type: ignore[no-untyped-call]
