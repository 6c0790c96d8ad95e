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
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

ErrorType = Literal["Invalid", "Required", "Forbidden", "Internal", "NotSupported", "Duplicate", "TooMany", "TooLong"]

DENIAL_HEADER = "validation failed:"
# The path of an error about the object as a whole.
ROOT_PATH: Final = "<root>"

# Validation stops collecting after this many errors, so that refusing a hostile object (tens of
# thousands of bad entries) costs no more than refusing an honest one; a denial then says "at least".
MAX_COLLECTED_ERRORS: Final = 1_000
# A denial shows at most this many errors and this much of their text; the others are counted in a last
# line. The answer stays small and cheap to build whatever the object holds, and fits a status
# condition's message (32768 characters at most).
MAX_SHOWN_ERRORS: Final = 20
MAX_SHOWN_CHARS: Final = 8_192
# Parts of one error that can quote the user's object (map keys in a path, values, details that quote a
# URI) are clipped to these lengths.
MAX_PATH_CHARS: Final = 256
MAX_VALUE_CHARS: Final = 256
MAX_DETAIL_CHARS: Final = 1_024

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
_PATH_BOUNDARIES: Final = ".["


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


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
        return f"{self.shown_path}: {self.body()}"

    @property
    def shown_path(self) -> str:
        return clip(self.path, MAX_PATH_CHARS)

    def body(self) -> str:
        """The error without its path, as a StatusCause's message carries it."""
        head = _TYPE_TEXT[self.type]
        if self.type in _WITH_VALUE:
            head = f"{head}: {clip(render_value(self.value), MAX_VALUE_CHARS)}"
        return f"{head}: {clip(self.detail, MAX_DETAIL_CHARS)}" if self.detail else head

    @property
    def cause_reason(self) -> str:
        return _CAUSE_REASON[self.type]


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path=path, type="Invalid", value=value, detail=detail)


def required(path: str, detail: str) -> FieldError:
    return FieldError(path=path, type="Required", detail=detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path=path, type="Forbidden", detail=detail)


@dataclass(frozen=True)
class DenialLine:
    """One line of a denial: a shown error, or the count of those not shown. A StatusCause each."""

    path: str
    reason: str
    body: str

    def render(self) -> str:
        return f"{self.path}: {self.body}"


def denial_lines(errors: Sequence[FieldError]) -> list[DenialLine]:
    """The errors a denial shows (see MAX_SHOWN_ERRORS), then one line counting the rest if any."""
    lines: list[DenialLine] = []
    chars = 0
    for error in errors[:MAX_SHOWN_ERRORS]:
        line = DenialLine(path=error.shown_path, reason=error.cause_reason, body=error.body())
        chars += len(line.path) + len(line.body)
        if lines and chars > MAX_SHOWN_CHARS:
            break
        lines.append(line)
    omitted = errors[len(lines) :]
    if omitted:
        lines.append(_omitted_line(omitted, complete=len(errors) < MAX_COLLECTED_ERRORS))
    return lines


def _omitted_line(omitted: Sequence[FieldError], *, complete: bool) -> DenialLine:
    noun = "error" if len(omitted) == 1 else "errors"
    count = f"{len(omitted)} more {noun}" if complete else f"at least {len(omitted)} more {noun}"
    body = f"and {count}, not shown"
    if not complete:
        body += f" (validation stops after {MAX_COLLECTED_ERRORS})"
    path = clip(_common_parent([error.path for error in omitted]), MAX_PATH_CHARS)
    return DenialLine(path=path, reason=_CAUSE_REASON["Invalid"], body=body)


def _common_parent(paths: Sequence[str]) -> str:
    """The longest field path that every one of `paths` is, or lies under (`<root>` when none)."""
    first, last = min(paths), max(paths)  # the common prefix of all is that of the extremes
    size = 0
    for a, b in zip(first, last, strict=False):
        if a != b:
            break
        size += 1
    prefix = first[:size]
    if all(len(path) == size or path[size] in _PATH_BOUNDARIES for path in paths):
        return prefix or ROOT_PATH
    cut = max(prefix.rfind(boundary) for boundary in _PATH_BOUNDARIES)
    return prefix[:cut] if cut > 0 else ROOT_PATH


def format_denial(errors: Sequence[FieldError]) -> str:
    """The one message a user sees, e.g. from `kubectl apply`."""
    return denial_message(denial_lines(errors))


def denial_message(lines: Sequence[DenialLine]) -> str:
    return "\n".join([DENIAL_HEADER, *(f"  - {line.render()}" for line in lines)])


class ValidationFailed(Exception):
    """An object failed validation; `str()` is the denial message the webhook would give."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__(format_denial(self.errors))


def duplicate(path: str, value: object) -> FieldError:
    return FieldError(path=path, type="Duplicate", value=value, detail="")


def pydantic_detail_message(detail: ErrorDetails) -> str:
    """The words for one pydantic error: a rule of ours says its own message, not pydantic's "Value error, "
    wrapping of it; pydantic's own checks (bounds, types, required) keep pydantic's message."""
    if detail["type"] in {"value_error", "assertion_error"}:
        error = (detail.get("ctx") or {}).get("error")
        if error is not None:
            return str(error)
    return detail["msg"]
