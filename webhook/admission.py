"""AdmissionReview (`admission.k8s.io/v1`) payloads and the request -> response logic, free of HTTP.

Two kinds of failure are kept apart (docs/design/webhook.md §2, §3): a review that is not a well-formed AdmissionReview
raises `BadReview` (the HTTP layer answers 400 with its one-line reason); an object that is not a valid
ModelBooster is a *denial*, HTTP 200 with `allowed: false`, so `kubectl` shows the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, TypedDict, cast, get_args

from shared.constants import KIND_MODEL_BOOSTER, WORKLOAD_GROUP
from shared.defaults import apply_defaults
from shared.errors import FieldError, denial_lines, denial_message
from shared.ratchet import Ratcheted, carried_warnings, same_json
from shared.validation import validate_modelbooster, validate_update
from webhook.patch import encode_patch
from webhook.pruned import older_crd_error, older_crd_warning, pruned_paths
from webhook.shape import excess

log = logging.getLogger(__name__)

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
ADMISSION_KIND: Final = "AdmissionReview"
MAX_SHOWN_WARNINGS: Final = 10

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
OPERATIONS: Final[tuple[str, ...]] = get_args(Operation)
# The `reason` of every Status a denial carries; the metrics count denials by it, so the set stays closed.
DenialReason = Literal["Invalid", "BadRequest", "InternalError"]
DENIAL_REASONS: Final[tuple[str, ...]] = get_args(DenialReason)


class GroupVersionKind(TypedDict):
    group: str
    version: str
    kind: str


class GroupVersionResource(TypedDict):
    group: str
    version: str
    resource: str


class UserInfo(TypedDict, total=False):
    username: str
    uid: str
    groups: list[str]
    extra: dict[str, list[str]]


class AdmissionRequest(TypedDict):
    uid: str
    kind: NotRequired[GroupVersionKind]
    resource: NotRequired[GroupVersionResource]
    subResource: NotRequired[str]
    requestKind: NotRequired[GroupVersionKind]
    requestResource: NotRequired[GroupVersionResource]
    requestSubResource: NotRequired[str]
    name: NotRequired[str]
    namespace: NotRequired[str]
    operation: Operation
    userInfo: NotRequired[UserInfo]
    object: NotRequired[dict[str, Any] | None]
    oldObject: NotRequired[dict[str, Any] | None]
    dryRun: NotRequired[bool]
    options: NotRequired[dict[str, Any] | None]


class StatusCause(TypedDict):
    reason: str
    message: str
    field: str


class StatusDetails(TypedDict, total=False):
    name: str
    group: str
    kind: str
    causes: list[StatusCause]


class Status(TypedDict, total=False):
    metadata: dict[str, Any]
    status: Literal["Success", "Failure"]
    message: str
    reason: str
    details: StatusDetails
    code: int


class AdmissionResponse(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[Status]
    patch: NotRequired[str]
    patchType: NotRequired[Literal["JSONPatch"]]
    warnings: NotRequired[list[str]]


class AdmissionReview(TypedDict):
    apiVersion: str
    kind: str
    request: NotRequired[AdmissionRequest]
    response: NotRequired[AdmissionResponse]


class BadReview(ValueError):
    """The body is not an AdmissionReview we can answer; the message is one line for the HTTP reply."""


def _field_type(value: object) -> str:
    return "null" if value is None else type(value).__name__.replace("dict", "object").replace("list", "array")


def _expect_str(request: Mapping[str, Any], key: str) -> None:
    if key in request and not isinstance(request[key], str):
        raise BadReview(f"request.{key} must be a string, got {_field_type(request[key])}")


def _expect_object(request: Mapping[str, Any], key: str) -> None:
    if request.get(key) is not None and not isinstance(request[key], dict):
        raise BadReview(f"request.{key} must be a JSON object, got {_field_type(request[key])}")


def parse_review(data: object) -> tuple[str, AdmissionRequest]:
    """Check the envelope and the request fields we rely on; return (apiVersion, request)."""
    if not isinstance(data, dict):
        raise BadReview(f"expected an AdmissionReview JSON object, got {_field_type(data)}")
    api_version = data.get("apiVersion")
    if api_version != ADMISSION_API_VERSION:
        raise BadReview(f"unsupported AdmissionReview apiVersion {api_version!r}; expected {ADMISSION_API_VERSION!r}")
    if data.get("kind") != ADMISSION_KIND:
        raise BadReview(f"expected kind {ADMISSION_KIND!r}, got {data.get('kind')!r}")
    request = data.get("request")
    if request is None:
        raise BadReview("AdmissionReview has no request")
    if not isinstance(request, dict):
        raise BadReview(f"request must be a JSON object, got {_field_type(request)}")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid must be a non-empty string")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise BadReview(f"request.operation {operation!r} is not one of {', '.join(OPERATIONS)}")
    for key in ("name", "namespace", "subResource"):
        _expect_str(request, key)
    for key in ("object", "oldObject", "kind", "options"):
        _expect_object(request, key)
    if "dryRun" in request and not isinstance(request["dryRun"], bool):
        raise BadReview(f"request.dryRun must be a boolean, got {_field_type(request['dryRun'])}")
    if operation in ("CREATE", "UPDATE") and not isinstance(request.get("object"), dict):
        raise BadReview(f"request.object is required for {operation}")
    if operation == "UPDATE" and not isinstance(request.get("oldObject"), dict):
        raise BadReview("request.oldObject is required for UPDATE")
    return api_version, cast(AdmissionRequest, request)


def review_response(*, api_version: str, response: AdmissionResponse) -> AdmissionReview:
    return {"apiVersion": api_version, "kind": ADMISSION_KIND, "response": response}


def object_identity(request: AdmissionRequest) -> tuple[str, str]:
    """(namespace, name) for logs: the request's, else the object's metadata (generateName leaves none)."""
    namespace, name = request.get("namespace", ""), request.get("name", "")
    obj = request.get("object") or request.get("oldObject") or {}
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(metadata, dict):
        namespace = namespace or str(metadata.get("namespace") or "")
        name = name or str(metadata.get("name") or metadata.get("generateName") or "")
    return namespace, name


def _allowed(request: AdmissionRequest) -> AdmissionResponse:
    return {"uid": request["uid"], "allowed": True}


def _denied(request: AdmissionRequest, *, code: int, reason: DenialReason, message: str) -> AdmissionResponse:
    return {
        "uid": request["uid"],
        "allowed": False,
        "status": {"metadata": {}, "status": "Failure", "code": code, "reason": reason, "message": message},
    }


def _invalid(request: AdmissionRequest, errors: Sequence[FieldError]) -> AdmissionResponse:
    """422 Invalid with one StatusCause per field error, as kube-apiserver's own validation reports."""
    lines = denial_lines(errors)
    response = _denied(request, code=422, reason="Invalid", message=denial_message(lines))
    # The same lines as the message: kubectl prints the causes, not the message, for an Invalid status.
    causes: list[StatusCause] = [{"reason": line.reason, "message": line.body, "field": line.path} for line in lines]
    _, name = object_identity(request)
    response["status"]["details"] = {
        "name": name,
        "group": WORKLOAD_GROUP,
        "kind": KIND_MODEL_BOOSTER,
        "causes": causes,
    }
    return response


def _internal(request: AdmissionRequest, what: str) -> AdmissionResponse:
    # A defect of ours must not let an unchecked object in, nor show a traceback: deny, and log it.
    log.exception("internal error while %s", what, extra={"context": {"uid": request["uid"]}})
    return _denied(
        request,
        code=500,
        reason="InternalError",
        message=f"internal error in the modelbooster webhook while {what} (request uid {request['uid']}); "
        "see the webhook's logs",
    )


def _too_deep(request: AdmissionRequest) -> AdmissionResponse:
    # Free-form fields (`config`) can nest arbitrarily; past Python's recursion limit we refuse, by name.
    return _denied(request, code=400, reason="BadRequest", message="the object is nested too deeply to be processed")


def beyond_bounds(request: AdmissionRequest) -> AdmissionResponse | None:
    """A denial when the object is nested too deeply or holds too many values (webhook/shape.py).

    Checked before defaulting and validation, so that /mutate and /validate give the same answer. An
    oldObject beyond the bounds was stored without this webhook; it is set aside (the UPDATE rules that
    compare with it are skipped) rather than making the object impossible to fix.
    """
    if _untouched(request):
        return None
    why = excess(request.get("object") or {})
    if why is not None:
        return _denied(request, code=400, reason="BadRequest", message=f"the object cannot be admitted: {why}")
    old = request.get("oldObject")
    if old is not None and excess(old) is not None:
        log.info("oldObject beyond the shape bounds: UPDATE rules skipped", extra={"context": {"uid": request["uid"]}})
        request["oldObject"] = None
    return None


def _not_ours(request: AdmissionRequest) -> AdmissionResponse | None:
    """A denial when the request is for another kind (a misconfigured webhook configuration)."""
    kind = request.get("kind")
    if kind is None or (kind.get("group") == WORKLOAD_GROUP and kind.get("kind") == KIND_MODEL_BOOSTER):
        return None
    got = f"{kind.get('group') or 'core'}/{kind.get('version', '?')} {kind.get('kind', '?')}"
    return _denied(
        request,
        code=400,
        reason="BadRequest",
        message=f"this webhook admits {WORKLOAD_GROUP} {KIND_MODEL_BOOSTER} objects only, not {got}",
    )


def _untouched(request: AdmissionRequest) -> bool:
    # Deletes and connects carry nothing to default or check; a subresource (status, scale) write is the
    # controllers' business, and blocking it would stop status from being reported on a bad object.
    return request["operation"] in ("DELETE", "CONNECT") or bool(request.get("subResource"))


def _spec_unchanged(request: AdmissionRequest) -> bool:
    """An UPDATE that changes nothing but metadata (labels, annotations, finalizers, ownerReferences,
    deletion) or status: never blocked and never patched, so that an object stored under older rules can
    still be relabelled, finalized by the garbage collector, and deleted."""
    if request["operation"] != "UPDATE":
        return False
    new, old = request.get("object") or {}, request.get("oldObject") or {}
    ignored = ("metadata", "status")
    return same_json(
        {key: value for key, value in new.items() if key not in ignored},
        {key: value for key, value in old.items() if key not in ignored},
    )


def mutate(request: AdmissionRequest) -> AdmissionResponse:
    if _untouched(request):
        return _allowed(request)
    if (denial := _not_ours(request)) is not None:
        return denial
    obj = request.get("object") or {}
    try:
        if _spec_unchanged(request):
            return _allowed(request)
        # The mutating webhook runs before the CRD's own validation: the one place to say that an older
        # served CRD pruned what the user sent (webhook/pruned.py).
        pruned = pruned_paths(obj)
        if pruned and (error := older_crd_error(obj, pruned)) is not None:
            return _invalid(request, [error])
        defaulted = apply_defaults(obj)
    except RecursionError:
        return _too_deep(request)
    except Exception:
        return _internal(request, "applying defaults")
    response = _allowed(request)
    response["patch"] = encode_patch(defaulted.ops)
    response["patchType"] = "JSONPatch"
    warnings = [older_crd_warning(pruned)] if pruned else []
    if defaulted.warnings or warnings:
        response["warnings"] = _shown_warnings([*warnings, *defaulted.warnings])
    return response


def _shown_warnings(warnings: Sequence[str]) -> list[str]:
    # One warning per worker could be thousands in a hostile object; kubectl prints each on its own line.
    shown = list(warnings[:MAX_SHOWN_WARNINGS])
    if len(warnings) > len(shown):
        shown.append(f"and {len(warnings) - len(shown)} more warnings like these, not shown")
    return shown


def validate(request: AdmissionRequest) -> AdmissionResponse:
    if _untouched(request):
        return _allowed(request)
    if (denial := _not_ours(request)) is not None:
        return denial
    obj = request.get("object") or {}
    old = request.get("oldObject")
    try:
        if _spec_unchanged(request):
            return _allowed(request)
        if request["operation"] == "UPDATE" and old is not None:
            verdict = validate_update(obj, old=old)
        else:
            verdict = Ratcheted(errors=validate_modelbooster(obj))
    except RecursionError:
        return _too_deep(request)
    except Exception:
        return _internal(request, "validating")
    response = _invalid(request, verdict.errors) if verdict.errors else _allowed(request)
    if verdict.carried:
        response["warnings"] = carried_warnings(verdict.carried)
    return response
