"""The mutating webhook's RFC 6902 patch on the wire.

The ops themselves come from defaulting (`shared.defaults.Defaulted.ops`), recorded as each default is set:
one op per value set, in the order defaulting walks the object, so the same request gives the same patch
from every replica. Diffing the object before and after instead (a general JSON diff) cost ten times what
defaulting does, and needed its result checked, since a list diff can emit ops that do not apply.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def encode_patch(ops: list[dict[str, Any]]) -> str:
    """The `response.patch` field: base64 of the compact JSON array."""
    return base64.b64encode(json.dumps(ops, separators=(",", ":"), ensure_ascii=False).encode()).decode("ascii")
