"""AdmissionReviews shaped exactly like the ones kube-apiserver sends for a ModelBooster write.

Field for field what `admission.k8s.io/v1` carries from a real API server (`kubectl apply` of a
namespaced custom resource): uid, kind/resource and their request* twins, name, namespace, operation,
userInfo, object, oldObject, dryRun and the operation's options object.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

GVK = {"group": "workload.serving.volcano.sh", "version": "v1alpha1", "kind": "ModelBooster"}
GVR = {"group": "workload.serving.volcano.sh", "version": "v1alpha1", "resource": "modelboosters"}
KUBECTL_USER = {
    "username": "kubernetes-admin",
    "uid": "aws-iam-authenticator:123456789012:AIDAEXAMPLE",
    "groups": ["system:masters", "system:authenticated"],
}
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def review(
    *,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None = None,
    dry_run: bool = False,
    uid: str | None = None,
) -> dict[str, Any]:
    source = obj if obj is not None else old or {}
    metadata = source.get("metadata", {})
    options: dict[str, Any] | None = None
    if operation in _OPTIONS_KIND:
        options = {"kind": _OPTIONS_KIND[operation], "apiVersion": "meta.k8s.io/v1"}
        if operation != "DELETE":
            options["fieldManager"] = "kubectl-client-side-apply"
            options["fieldValidation"] = "Strict"
        else:
            options["propagationPolicy"] = "Background"
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": dict(GVK),
        "resource": dict(GVR),
        "requestKind": dict(GVK),
        "requestResource": dict(GVR),
        "name": metadata.get("name", ""),
        "namespace": metadata.get("namespace", "default"),
        "operation": operation,
        "userInfo": copy.deepcopy(KUBECTL_USER),
        "object": copy.deepcopy(obj),
        "oldObject": copy.deepcopy(old),
        "dryRun": dry_run,
        "options": options,
    }
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


def as_stored(obj: dict[str, Any], *, uid: str = "7d3f6c1e-0b1a-4c55-9d2e-1f0e8a6b9c01") -> dict[str, Any]:
    """The object as the API server hands it to admission on CREATE: server-set metadata filled in."""
    stored = copy.deepcopy(obj)
    metadata = stored.setdefault("metadata", {})
    metadata.setdefault("namespace", "default")
    metadata.update(
        {
            "uid": uid,
            "creationTimestamp": "2026-03-01T12:00:00Z",
            "generation": 1,
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": "workload.serving.volcano.sh/v1alpha1",
                    "time": "2026-03-01T12:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {}},
                }
            ],
        }
    )
    return stored
