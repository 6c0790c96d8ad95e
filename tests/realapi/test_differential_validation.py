"""Our validation's one answer against kube-apiserver's, for the same objects (tests/realapi/scenarios.py,
`WHOLE_LIST_CASES`) sent to a real kube-apiserver v1.36 without our webhook: its own schema and the CRD's CEL
rules (docs/design/validation.md §10).

Every field error the server reports, ours reports too, at the same path or below it (the CEL rule of a worker's
field stops at `workers`: a `fieldPath` cannot index a list), of the same kind. What ours adds is listed by hand
per case with the reason: the webhook's rules the CRD cannot express, the CEL rules the server skips after a
blocking schema error (it says so with a `<nil>` cause, which is not compared), unknown fields it prunes (with
a warning), and what Kubernetes refuses only when a pod is created. The fake API server is held to the real one
on the same objects by the differential suite (scenario `modelbooster_whole_list`).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from shared.defaults import apply_defaults
from shared.validation import validate_modelbooster
from tests.realapi.controlplane import RealCluster
from tests.realapi.differential import Recorder
from tests.realapi.scenarios import WHOLE_LIST_CASES, boosters, whole_list_case

# What our answer has beyond the server's, by case: (path, why).
OURS_ALONE: dict[str, list[tuple[str, str]]] = {
    "behavior and 8GB": [],
    "a wrong type, behavior and two workers": [
        ("spec.backends[1].workers", "the webhook's rule: a vLLM backend has exactly one worker"),
        ("spec.autoscalingPolicy.behavior", "the server skips its CEL rules after a wrong type"),
    ],
    "minReplica for minReplicas": [("spec.backend.minReplica", "the server prunes an unknown field, with a warning")],
    "modelUri for modelURI, and rateLimit": [
        ("spec.backends[0].modelUri", "pruned by the server, with a warning"),
        ("spec.rateLimit", "the server skips its CEL rules after a missing field"),
    ],
    "bakends for backends, and rateLimit": [("spec.bakends", "pruned by the server, with a warning")],
    "two patterns and a worker's networkTopology": [],
    "an unknown backend type, two workers and a backend rateLimit": [
        ("spec.backends[0].rateLimit", "the server skips its CEL rules after a value outside an enumeration"),
    ],
    "half a GPU": [
        ("spec.backends[0].workers[0].resources.limits.nvidia.com/gpu", "Kubernetes refuses it when a pod is created"),
    ],
    "a bad name and a bad quantity": [],
}
# kube-apiserver's cause reasons, and the error type each is among ours.
SAME_KIND = {
    "FieldValueTypeInvalid": "FieldValueInvalid",
    "FieldValueInvalid": "FieldValueInvalid",
    "FieldValueRequired": "FieldValueRequired",
    "FieldValueForbidden": "FieldValueForbidden",
    "FieldValueNotSupported": "FieldValueNotSupported",
    "FieldValueDuplicate": "FieldValueDuplicate",
    "FieldValueTooMany": "FieldValueTooMany",
    "FieldValueTooLong": "FieldValueTooLong",
}
# The cause kube-apiserver adds when it skipped its CEL rules.
NOT_CHECKED = "<nil>"
_MAP_KEY = re.compile(r"\[([^\]]*[^\]0-9][^\]]*)\]")


def _as_the_server_prints(path: str) -> str:
    """Our paths put map keys in brackets (`limits[memory]`), kube-apiserver's schema errors after a dot."""
    return _MAP_KEY.sub(r".\1", path)


def _below(path: str, outer: str) -> bool:
    return path == outer or path.startswith((outer + ".", outer + "["))


def test_every_case_has_its_expectation() -> None:
    assert set(OURS_ALONE) == set(WHOLE_LIST_CASES)


@pytest.mark.parametrize("label", list(WHOLE_LIST_CASES))
def test_our_answer_holds_every_error_the_real_server_reports(
    label: str, real_api: RealCluster, real_crds: list[dict[str, Any]], real_namespace: str
) -> None:
    document = whole_list_case(list(WHOLE_LIST_CASES).index(label), label)
    with real_api.api_client() as api:
        recorder = Recorder(api, real_namespace)
        answer = recorder.send("POST", f"{boosters(recorder)}?dryRun=All", body=document)
    assert answer.status in (201, 422), answer.body
    theirs = [
        (cause["field"], cause["reason"])
        for cause in ((answer.body or {}).get("details") or {}).get("causes") or ()
        if cause["field"] != NOT_CHECKED
    ]
    answer_of_ours = validate_modelbooster(apply_defaults(document).obj)
    ours = [(_as_the_server_prints(error.path), error.cause_reason) for error in answer_of_ours]

    missing = [
        (path, reason)
        for path, reason in theirs
        if not any(_below(mine, path) and kind == SAME_KIND[reason] for mine, kind in ours)
    ]
    assert not missing, f"the real server reports what we do not: {missing}\nours: {ours}"
    alone = [
        mine for mine, kind in ours if not any(_below(mine, path) and kind == SAME_KIND[why] for path, why in theirs)
    ]
    assert alone == [path for path, _why in OURS_ALONE[label]]
