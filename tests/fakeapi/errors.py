"""Status bodies and field errors, worded the way kube-apiserver words them.

The `kubernetes` client (and kubectl) only look at `code`, `reason` and `message`, but tests compare
messages, so the texts follow apimachinery's `errors` and `validation/field` packages.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

Obj = dict[str, Any]


class _Omit:
    """Marker for a field error whose value is not printed (apimachinery's `field.OmitValueType`)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()

# Error type -> text shown in messages (apimachinery field.ErrorType.String()).
_TYPE_TEXT: Final = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}
# Types whose message never shows the bad value.
_VALUELESS: Final = {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"}


def go_float(value: float) -> str:
    """Go's `%v` of a float64: shortest round-trip digits, exponent form when the exponent is < -4 or >= 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    number = Decimal(repr(value))
    sign, digit_tuple, exp = number.as_tuple()
    assert isinstance(exp, int)
    point = len(digit_tuple) + exp
    digits = "".join(str(d) for d in digit_tuple).rstrip("0") or "0"
    exponent = point - 1 if digits != "0" else 0
    prefix = "-" if sign else ""
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"
    text = format(abs(number), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return prefix + text


def go_quote(text: str) -> str:
    """Go's `%q` of a string, close enough for the printable text in validation messages."""
    return json.dumps(text, ensure_ascii=False)


def go_sharp_v(value: Any) -> str:
    """Go's `%#v` of a decoded JSON value, as printed for maps and lists in field errors."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_sharp_v(v) for v in value) + "}"
    if isinstance(value, dict):
        items = ", ".join(f"{go_quote(k)}:{go_sharp_v(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + items + "}"
    return repr(value)


@dataclass(frozen=True)
class RawValue:
    """A bad value printed exactly as given (for Go values no JSON type prints like, e.g. `0x0`)."""

    text: str


def go_json(value: Any) -> str:
    """Go's `json.Marshal` of a decoded JSON value: compact, map keys sorted, `<`, `>`, `&` escaped."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def format_value(value: Any) -> str:
    """How a field error prints its bad value, as apimachinery v1.36 does: `null`, `%v` for numbers and
    booleans, `%q` for strings, and JSON for maps and lists (older servers printed Go's `%#v`, e.g.
    `map[string]interface {}{...}`; seen on v1.36.2: `Duplicate value: {"name":"p"}`)."""
    if isinstance(value, RawValue):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_json(value)


@dataclass(frozen=True)
class FieldError:
    """One entry of a field.ErrorList."""

    type: str
    field: str
    bad_value: Any = ""
    detail: str = ""

    def body(self) -> str:
        text = _TYPE_TEXT[self.type]
        if self.type not in _VALUELESS and self.bad_value is not OMIT:
            text = f"{text}: {format_value(self.bad_value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, "", detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, value, detail)


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueTypeInvalid", path, value, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, "", detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", path, value, "")


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in supported) if supported else ""
    return FieldError("FieldValueNotSupported", path, value, detail)


def too_long(path: str, max_length: int) -> FieldError:
    # Current apimachinery (1.32+) wording; 1.24 said "may not be longer than N".
    return FieldError("FieldValueTooLong", path, "<value omitted>", f"may not be more than {max_length} bytes")


def too_many(path: str, actual: int, maximum: int) -> FieldError:
    return FieldError("FieldValueTooMany", path, actual, f"must have at most {maximum} items")


def aggregate(errors: list[FieldError]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message, or `[a, b]` for several (duplicates dropped)."""
    seen: list[str] = []
    for err in errors:
        text = str(err)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


@dataclass(frozen=True)
class GroupResource:
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True)
class GroupKind:
    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass
class ApiError(Exception):
    """An error answer: the HTTP status code and the Status body kube-apiserver would send."""

    code: int
    reason: str
    message: str
    details: Obj | None = None
    headers: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # sent with the error too (e.g. pruned unknown fields)
    text: str | None = None  # a plain-text body instead of a Status (the HTTP mux's own 404)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:  # an empty `details: {}` is sent as such (e.g. a 404 of an unknown path)
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(resource: GroupResource, name: str, **extra: Any) -> Obj:
    details: Obj = {"name": name} if name else {}  # `name` is omitempty in StatusDetails
    if resource.group:
        details["group"] = resource.group
    details["kind"] = resource.resource
    details.update(extra)
    return details


def not_found(resource: GroupResource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{resource} "{name}" not found', _details(resource, name))


def already_exists(resource: GroupResource, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists', _details(resource, name))


def conflict(resource: GroupResource, name: str, why: str) -> ApiError:
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {resource} "{name}": {why}', _details(resource, name)
    )


STALE_OBJECT: Final = "the object has been modified; please apply your changes to the latest version and try again"


def invalid_object(kind: GroupKind, name: str, errors: list[FieldError]) -> ApiError:
    causes = [{"reason": e.type, "message": e.body(), "field": e.field} for e in errors]
    details: Obj = {"name": name} if name else {}
    if kind.group:
        details["group"] = kind.group
    details["kind"] = kind.kind
    details["causes"] = causes
    message = f'{kind} "{name}" is invalid'
    if errors:
        message += ": " + aggregate(errors)
    return ApiError(422, "Invalid", message, details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden_error(resource: GroupResource, name: str, why: str) -> ApiError:
    subject = f'{resource} "{name}"' if name else str(resource)
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {why}", _details(resource, name))


def method_not_supported(resource: GroupResource, action: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f'{action} is not supported on resources of kind "{resource}"',
        {"group": resource.group, "kind": resource.resource} if resource.group else {"kind": resource.resource},
    )


def unsupported_media_type(accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted),
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def not_found_path() -> ApiError:
    """An unknown path under /api (the legacy group answers with a Status)."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def page_not_found() -> ApiError:
    """An unknown path elsewhere: a group, version or resource the server does not serve under /apis, or no API
    path at all. kube-apiserver's HTTP mux answers these itself, in plain text, not with a Status: a client
    (an informer listing a kind that is not installed) sees `404 page not found`."""
    return ApiError(404, "NotFound", "404 page not found", text="404 page not found\n")


def apply_conflict(causes: list[Obj], message: str) -> ApiError:
    return ApiError(409, "Conflict", message, {"causes": causes})


def success_status(resource: GroupResource, name: str, uid: str) -> Obj:
    """The body of a DELETE of a kind that does not return the deleted object (store.finalizeDelete)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": _details(resource, name, uid=uid),
    }
