"""Enumerated fields whose schema declares more values than we serve, and how a refusal names the fix.

The CRD's enum of a backend's `type` keeps every value Kthena declares, so that objects written for Kthena
decode (docs/design/api.md); but only `SUPPORTED_BACKEND_TYPES` are served, the others are refused by a rule of
their own. A misspelt type (`vllm`) must therefore list only what can be chosen, and name the value it most
likely meant, instead of offering values that are refused next.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from shared.api.modelbooster import SUPPORTED_BACKEND_TYPES
from shared.errors import FieldError
from shared.spelling import one_edit_apart

_BACKEND_TYPE: Final = re.compile(r"^spec\.(?:backends\[\d+\]|backend)\.type$")


def closest_value(value: object, allowed: Sequence[str]) -> str | None:
    """The allowed value `value` differs from only in letter case or separators (`vllm`, `v-llm` -> `vLLM`), or
    by one edit (`prefil` -> `prefill`, shared/spelling.py)."""
    if not isinstance(value, str):
        return None
    wanted = _folded(value)
    folded = next((option for option in allowed if _folded(option) == wanted), None)
    return folded or next((option for option in allowed if one_edit_apart(value, option)), None)


def _folded(text: str) -> str:
    return re.sub(r"[\s_\-]", "", text).casefold()


def supported_values_detail(value: object, allowed: Sequence[str]) -> str:
    listed = ", ".join(f'"{option}"' for option in allowed)
    meant = closest_value(value, allowed)
    return f'supported values: {listed}; did you mean "{meant}"?' if meant else f"supported values: {listed}"


def with_offered_values(errors: list[FieldError]) -> list[FieldError]:
    """The errors, where a backend type outside the enum lists the types served, not every declared one."""
    return [
        replace(error, detail=supported_values_detail(error.value, SUPPORTED_BACKEND_TYPES))
        if error.type == "NotSupported" and _BACKEND_TYPE.match(error.path)
        else error
        for error in errors
    ]
