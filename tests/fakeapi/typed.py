"""Decoding checks of built-in kinds' typed fields, worded as kube-apiserver's Go decoder words them.

A built-in object is decoded into its Go struct before anything else runs, so a value of the wrong JSON type or
a timestamp in another layout is a 400 `<Kind> in version "v1" cannot be handled as a <Kind>: <error>`. The
fake checks the fields our code and Kubernetes clients write (Lease and Event timestamps and counters); seen on
kube-apiserver v1.36.2, e.g. a Lease `renewTime` without microseconds is refused:

    parsing time "2026-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

TIME_LAYOUT: Final = "2006-01-02T15:04:05Z07:00"  # metav1.Time: RFC 3339
MICRO_TIME_LAYOUT: Final = "2006-01-02T15:04:05.000000Z07:00"  # metav1.MicroTime: exactly six fraction digits

# Layout elements in order: (element as Go names it, what the value must hold there).
_DATE_TIME: Final = (
    ("2006", r"\d{4}"),
    ("-", "-"),
    ("01", r"\d\d"),
    ("-", "-"),
    ("02", r"\d\d"),
    ("T", "T"),
    ("15", r"\d\d"),
    (":", ":"),
    ("04", r"\d\d"),
    (":", ":"),
    ("05", r"\d\d"),
)
_ZONE: Final = ("Z07:00", r"Z|[+-]\d\d:\d\d")


@dataclass(frozen=True)
class Field:
    go_type: str  # "int32", "string", "Time", "MicroTime"
    struct: str  # the Go struct holding it, as json's errors name it


def _time_error(value: str, *, micro: bool) -> str | None:
    """Go's time.Parse error for `value` in the (Micro)Time layout, or None when it parses."""
    layout = MICRO_TIME_LAYOUT if micro else TIME_LAYOUT
    elements = [*_DATE_TIME, (".000000", r"\.\d{6}")] if micro else [*_DATE_TIME, ("", r"(?:[.,]\d+)?")]
    position = 0
    for element, pattern in [*elements, _ZONE]:
        match = re.compile(pattern).match(value, position)
        if match is None:
            return f'parsing time "{value}" as "{layout}": cannot parse "{value[position:]}" as "{element}"'
        position = match.end()
    if position != len(value):
        return f'parsing time "{value}": extra text: "{value[position:]}"'
    return None


def json_kind(value: Any) -> str:
    """The JSON type of a decoded value, as Go's decoder names it in "cannot unmarshal X into ..." errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def decode_error(obj: Mapping[str, Any], fields: Mapping[str, Field]) -> str | None:
    """The first decoding error of `obj`'s typed fields (dotted paths), or None. JSON null decodes as unset."""
    for path, spec in fields.items():
        value: Any = obj
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            continue
        if spec.go_type in ("Time", "MicroTime"):
            if isinstance(value, str):
                error = _time_error(value, micro=spec.go_type == "MicroTime")
                if error:
                    return error
                continue
            return f"json: cannot unmarshal {json_kind(value)} into Go value of type string"
        if spec.go_type == "int32":
            if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31:
                continue
            shown = "number " + str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            what = shown or json_kind(value)
            return f"json: cannot unmarshal {what} into Go struct field {spec.struct}.{path} of type int32"
        if spec.go_type == "string" and not isinstance(value, str):
            return (
                f"json: cannot unmarshal {json_kind(value)} into Go struct field {spec.struct}.{path} of type string"
            )
    return None


LEASE_FIELDS: Final = {
    "spec.holderIdentity": Field("string", "LeaseSpec"),
    "spec.leaseDurationSeconds": Field("int32", "LeaseSpec"),
    "spec.acquireTime": Field("MicroTime", "LeaseSpec"),
    "spec.renewTime": Field("MicroTime", "LeaseSpec"),
    "spec.leaseTransitions": Field("int32", "LeaseSpec"),
}
CORE_EVENT_FIELDS: Final = {
    "firstTimestamp": Field("Time", "Event"),
    "lastTimestamp": Field("Time", "Event"),
    "eventTime": Field("MicroTime", "Event"),
    "count": Field("int32", "Event"),
    "series.lastObservedTime": Field("MicroTime", "EventSeries"),
    "series.count": Field("int32", "EventSeries"),
}
EVENTS_V1_FIELDS: Final = {
    "deprecatedFirstTimestamp": Field("Time", "Event"),
    "deprecatedLastTimestamp": Field("Time", "Event"),
    "eventTime": Field("MicroTime", "Event"),
    "deprecatedCount": Field("int32", "Event"),
    "series.lastObservedTime": Field("MicroTime", "EventSeries"),
    "series.count": Field("int32", "EventSeries"),
}
