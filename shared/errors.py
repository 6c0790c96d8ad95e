"""Field errors and the denial message format shared by the webhook, the reconciler and the CLI.

The text follows Kubernetes apimachinery's field-error rendering, which Kthena's webhook used
(docs/design/validation.md §2): `<path>: Invalid value: <value>: <detail>`, `<path>: Required value: <detail>`,
`<path>: Forbidden: <detail>`, and the denial is `validation failed:` followed by one `  - ` line per error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

ErrorType = Literal["Invalid", "Required", "Forbidden", "Internal", "NotSupported", "Duplicate", "TooMany", "TooLong"]

DENIAL_HEADER = "validation failed:"

# How each error type is introduced in the message, and the StatusCause reason clients read.
_TYPE_TEXT: dict[str, str] = {
    "Invalid": "Invalid value",
    "Required": "Required value",
    "Forbidden": "Forbidden",
    "Internal": "Internal error",
    "NotSupported": "Unsupported value",
    "Duplicate": "Duplicate value",
    "TooMany": "Too many",
    "TooLong": "Too long",
}
_CAUSE_REASON: dict[str, str] = {
    "Invalid": "FieldValueInvalid",
    "Required": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Internal": "InternalError",
    "NotSupported": "FieldValueNotSupported",
    "Duplicate": "FieldValueDuplicate",
    "TooMany": "FieldValueTooMany",
    "TooLong": "FieldValueTooLong",
}
# Types whose rendering carries the offending value, as apimachinery does.
_WITH_VALUE = frozenset({"Invalid", "NotSupported", "Duplicate"})


def render_value(value: object) -> str:
    """Render a bad value the way Go's field errors do: numbers plain, strings quoted, the rest as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    # Go's json.Marshal: compact, map keys sorted.
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class FieldError:
    path: str
    type: ErrorType
    detail: str
    value: object = field(default=None)
    # The fields a cross-field rule read to find this error, when that is more than `path` (say both
    # minReplicas and maxReplicas). An UPDATE that changes none of them is not refused for it (shared/ratchet.py).
    reads: tuple[str, ...] = field(default=(), compare=False)

    def render(self) -> str:
        head = f"{self.path}: {_TYPE_TEXT[self.type]}"
        if self.type in _WITH_VALUE:
            head = f"{head}: {render_value(self.value)}"
        return f"{head}: {self.detail}" if self.detail else head

    @property
    def cause_reason(self) -> str:
        return _CAUSE_REASON[self.type]


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path=path, type="Invalid", value=value, detail=detail)


def required(path: str, detail: str) -> FieldError:
    return FieldError(path=path, type="Required", detail=detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path=path, type="Forbidden", detail=detail)


def format_denial(errors: Sequence[FieldError]) -> str:
    """The one message a user sees, e.g. from `kubectl apply`."""
    return "\n".join([DENIAL_HEADER, *(f"  - {error.render()}" for error in errors)])


class ValidationFailed(Exception):
    """An object failed validation; `str()` is the denial message the webhook would give."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__(format_denial(self.errors))


def duplicate(path: str, value: object) -> FieldError:
    return FieldError(path=path, type="Duplicate", value=value, detail="")
