"""What `render` and `validate` print with `-o`: objects as YAML or JSON, `-o name`, and denials as objects.

In `validate`'s report, a rejected object is written the way the API server answers a rejected write: a `v1`
`Status` with `reason: Invalid`, `code: 422` and one `details.causes` entry per field error (the same causes the
webhook returns), so a program reading `-o json` or `-o yaml` sees every result in one stream. `render`'s output
feeds `kubectl apply` and never holds a Status. `-o name` prints
`<kind>.<group>/<name>` per object, like `kubectl ... -o name`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from modelbooster.yaml_dumper import dump_documents
from shared.errors import FieldError, denial_lines, format_denial

OUTPUT_FORMATS = ("yaml", "json", "name")


def object_name(obj: Mapping[str, Any]) -> str:
    """`modelserving.workload.serving.volcano.sh/llama-cpu`; a core kind has no group (`service/x`)."""
    api_version = obj.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    kind = str(obj.get("kind") or "").lower()
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f"{kind}.{group}/{name or ''}" if group else f"{kind}/{name or ''}"


def invalid_status(
    obj: Mapping[str, Any], *, display: str, message: str, causes: Sequence[Mapping[str, str]]
) -> dict[str, Any]:
    """A `v1` Status saying `obj` is invalid; `causes` are StatusCause objects (reason, message, field)."""
    api_version = obj.get("apiVersion")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    details: dict[str, Any] = {}
    if isinstance(name, str) and name:
        details["name"] = name
    if isinstance(api_version, str) and "/" in api_version:
        details["group"] = api_version.rpartition("/")[0]
    if isinstance(obj.get("kind"), str):
        details["kind"] = obj["kind"]
    details["causes"] = [dict(cause) for cause in causes]
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": f"{display}: {message}",
        "reason": "Invalid",
        "details": details,
        "code": 422,
    }


def denial_status(obj: Mapping[str, Any], *, display: str, errors: Sequence[FieldError]) -> dict[str, Any]:
    """The Status of a ModelBooster the webhook would deny, with the webhook's message and causes."""
    causes = [{"reason": line.reason, "message": line.body, "field": line.path} for line in denial_lines(errors)]
    return invalid_status(obj, display=display, message=format_denial(errors), causes=causes)


def format_objects(objects: Sequence[Mapping[str, Any]], *, output: str, always_list: bool = False) -> str:
    """YAML: a stream; JSON: the one object, or a `v1` List (always a List with `always_list`); name: lines."""
    if output == "name":
        return "".join(object_name(obj) + "\n" for obj in objects)
    if output == "json":
        body: object = (
            objects[0]
            if len(objects) == 1 and not always_list
            else {"apiVersion": "v1", "kind": "List", "items": list(objects)}
        )
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    return dump_documents([dict(obj) for obj in objects])
