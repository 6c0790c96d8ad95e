"""What a user does about a stored ModelBooster that fails validation: the text after the denial's lines.

The reconciler puts it in the `Failed` condition and the `InvalidSpec` event of such an object (one stored
under Kthena v0.1.0 with a field we do not support, or written while the webhook was off), so that the
status says both what is wrong and how to get out of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from shared.errors import FieldError
from shared.fieldpath import BadFieldPath, json_pointer
from shared.ratchet import is_unsupported

# Enough for any real object; the removals past it are still listed as errors above.
MAX_REMOVALS: Final = 8

NOT_RECONCILED: Final = (
    "This ModelBooster is not reconciled until it is fixed: its children are neither created, updated nor deleted."
)


def how_to_fix(errors: Sequence[FieldError], *, namespace: str, name: str) -> str:
    lines = [NOT_RECONCILED]
    removals = _outermost([error.path for error in errors if is_unsupported(error)])
    if removals:
        ops = [{"op": "remove", "path": pointer} for pointer in removals[:MAX_REMOVALS]]
        patch = json.dumps(ops, separators=(",", ":"))
        lines.append(
            "Remove the unsupported fields (an update that only removes them is admitted), for example: "
            f"kubectl patch modelbooster {name} -n {namespace} --type=json -p '{patch}'"
        )
    if any(not is_unsupported(error) for error in errors):
        lines.append("Change the other fields listed above so that they pass.")
    return "\n".join(lines)


def _outermost(paths: Sequence[str]) -> list[str]:
    """JSON pointers of the fields to remove, without those inside another (a behavior holds its panicPolicy)."""
    pointers: list[str] = []
    for path in paths:
        try:
            pointers.append(json_pointer(path))
        except BadFieldPath:
            continue
    unique = list(dict.fromkeys(pointers))
    return [p for p in unique if not any(p.startswith(other + "/") for other in unique)]
