"""What kubectl prints for an API error, for the messages the docs and NOTES.txt promise.

Written from kubectl's `checkErr` (staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go): an `Invalid` Status
with details prints `The <kind> "<name>" is invalid: ` and then its causes (`<field>: <message>`), the only
cause on the same line, several as `* ` lines below; the Status' message (where kube-apiserver writes
`admission webhook "..." denied the request: ...`) is not printed at all. Other errors print
`Error from server (<reason>): <message>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def kubectl_prints(status: Mapping[str, Any]) -> str:
    details = status.get("details") or {}
    if status.get("reason") == "Invalid" and details:
        head = "The request is invalid"
        if details.get("kind") or details.get("name"):
            head = f'The {details.get("kind", "")} "{details.get("name", "")}" is invalid'
        elif status.get("message"):
            head = f"{head}: {status['message']}"
        causes = [f"{cause.get('field', '')}: {cause.get('message', '')}" for cause in details.get("causes") or []]
        if not causes:
            return head
        if len(causes) == 1:
            return f"{head}: {causes[0]}"
        return "\n".join([f"{head}: ", *(f"* {cause}" for cause in causes)])
    return f"Error from server ({status.get('reason', '')}): {status.get('message', '')}"
