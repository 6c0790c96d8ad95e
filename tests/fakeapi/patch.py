"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge patch is only accepted for built-in kinds (custom resources answer 415, like the real
server). Its list merge keys come from the Go types' `patchMergeKey` tags, for the kinds the fake serves.
"""

from __future__ import annotations

from typing import Any, Final

import jsonpatch

from tests.fakeapi import errors
from tests.fakeapi.util import deep_copy

Obj = dict[str, Any]

MERGE_PATCH: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
STRATEGIC_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
APPLY_PATCH_CBOR: Final = "application/apply-patch+cbor"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result: Obj = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def patch_failed() -> errors.ApiError:
    """A JSON patch that does not apply (a failed `test`, a missing path): kube-apiserver v1.36.2 answers 422
    Invalid without saying why (an empty Status details)."""
    return errors.ApiError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def json_patch(target: Obj, operations: Any) -> Obj:
    """Apply an RFC 6902 patch; a malformed patch is a 400, a failing one a 422 (as in patch.go)."""
    if not isinstance(operations, list):
        raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        patch = jsonpatch.JsonPatch(operations)
    except (jsonpatch.InvalidJsonPatch, TypeError) as err:
        raise errors.bad_request(str(err)) from err
    try:
        result = patch.apply(deep_copy(target))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError, TypeError) as err:
        raise patch_failed() from err
    if not isinstance(result, dict):
        raise patch_failed()
    return result


# patchMergeKey of lists with patchStrategy=merge, by path (list items as "[]").
_POD_SPEC_KEYS: Final = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "containers[].ports": "containerPort",
    "containers[].env": "name",
    "containers[].volumeMounts": "mountPath",
    "containers[].volumeDevices": "devicePath",
    "initContainers[].ports": "containerPort",
    "initContainers[].env": "name",
    "initContainers[].volumeMounts": "mountPath",
}
MERGE_KEYS: Final[dict[str, dict[str, str]]] = {
    "pods": {
        **{f"spec.{k}": v for k, v in _POD_SPEC_KEYS.items()},
        "status.conditions": "type",
    },
    "namespaces": {"status.conditions": "type"},
    "mutatingwebhookconfigurations": {"webhooks": "name"},
    "validatingwebhookconfigurations": {"webhooks": "name"},
}
_META_MERGE_KEYS: Final = {"metadata.ownerReferences": "uid"}
# Lists of scalars with patchStrategy=merge: a patch adds to them instead of replacing them.
PRIMITIVE_MERGE_LISTS: Final = {"metadata.finalizers"}


def strategic_merge_patch(target: Obj, patch: Any, *, plural: str) -> Obj:
    if not isinstance(patch, dict):
        raise errors.bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    keys = {**_META_MERGE_KEYS, **MERGE_KEYS.get(plural, {})}
    result = _smp_map(target, patch, "", keys)
    return result if isinstance(result, dict) else {}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _smp_map(original: Any, patch: Obj, path: str, keys: dict[str, str]) -> Any:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: deep_copy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive is not None:
        raise errors.bad_request(f"Unknown patch type: {directive} in map: {patch}")
    result: Obj = dict(original) if isinstance(original, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [v for v in result[name] if v not in value]
            continue
        child = _join(path, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _smp_map(result.get(key), value, child, keys)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and child in keys:
            result[key] = _smp_keyed_list(result.get(key), value, child, keys)
        elif isinstance(value, list) and child in PRIMITIVE_MERGE_LISTS:
            current = list(result.get(key) or [])
            result[key] = current + [v for v in value if v not in current]
        else:
            result[key] = deep_copy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _smp_keyed_list(original: Any, patch: list[Any], path: str, keys: dict[str, str]) -> list[Any]:
    merge_key = keys[path]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [deep_copy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    result = [deep_copy(i) for i in (original if isinstance(original, list) else [])]
    item_path = path + "[]"
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise errors.bad_request(f"map: {item} does not contain declared merge key: {merge_key}")
        position = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                del result[position]
            continue
        if position is None:
            result.append(_smp_map({}, item, item_path, keys))
        else:
            result[position] = _smp_map(result[position], item, item_path, keys)
    return result
