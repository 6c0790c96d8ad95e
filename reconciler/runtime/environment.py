"""Where and as whom this process runs: its namespace and its leader-election identity, and the error type
for settings that cannot be used. Every controller in the process shares these."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping

SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class SettingsError(ValueError):
    """A setting that cannot be used; the message names it."""


def detect_namespace(environ: Mapping[str, str] | None = None) -> str:
    """The namespace this process runs in: POD_NAMESPACE (downward API), the service account file, default."""
    environ = os.environ if environ is None else environ
    if environ.get("POD_NAMESPACE"):
        return environ["POD_NAMESPACE"]
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_FILE, encoding="utf-8") as handle:
            found = handle.read().strip()
    except OSError:
        return "default"
    return found or "default"


def detect_identity(environ: Mapping[str, str] | None = None) -> str:
    """The Lease holder identity: the pod name (downward API) or the host name, plus a random suffix so that a
    restarted container never mistakes the previous incarnation's Lease for its own."""
    environ = os.environ if environ is None else environ
    base = environ.get("POD_NAME") or socket.gethostname()
    return f"{base}_{uuid.uuid4().hex[:8]}"
