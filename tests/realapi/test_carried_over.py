"""ModelBoosters stored before our CRD's rules existed (as under Kthena v0.1.0's CRD, which declared the unsupported
fields without refusing them), then our CRD installed: what kube-apiserver v1.36 still lets a user do to them.

CRD validation runs on every write, and ratcheting does not spare a backend holding a free-form `behavior`
(seen on kube-apiserver v1.36), so our rules say themselves that a value the stored object already had is not
refused: transition rules with `optionalOldSelf` (docs/design/api.md §3). Relabels and status writes of such
objects pass, without warnings; giving a backend an unsupported field it did not have is refused.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest
from kubernetes.client import ApiException

from tests.e2e.harness import raw_exchange, raw_request
from tests.e2e.user import load_example, renamed
from tests.realapi.controlplane import RealCluster
from tests.realapi.crds import apply_crds, chart_crds
from tests.unit.test_examples import CEL_LINES

BOOSTERS: Final = "/apis/workload.serving.volcano.sh/v1alpha1/namespaces/{namespace}/modelboosters"
CRD_NAME: Final = "modelboosters.workload.serving.volcano.sh"
MERGE: Final = "application/merge-patch+json"


def _without_rules(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_rules(v) for k, v in value.items() if k != "x-kubernetes-validations"}
    if isinstance(value, list):
        return [_without_rules(v) for v in value]
    return value


def _ours() -> dict[str, Any]:
    return next(crd for crd in chart_crds() if crd["metadata"]["name"] == CRD_NAME)


def _install(api: Any, crd: dict[str, Any], *, namespace: str, refusing: bool) -> None:
    """Apply the CRD and wait until the API server validates with it (its handler follows the CRD with a lag)."""
    apply_crds(api, [crd])
    probe = renamed(load_example("invalid/behavior.yaml"), "probe", namespace)
    deadline = time.monotonic() + 15
    while True:
        try:
            raw_request(api, "POST", BOOSTERS.format(namespace=namespace) + "?dryRun=All", body=probe)
            refused = False
        except ApiException:
            refused = True
        if refused == refusing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the ModelBooster CRD {'with' if refusing else 'without'} rules did not take effect")
        time.sleep(0.1)


@pytest.fixture
def carried_over(real_api: RealCluster, real_crds: list[dict[str, Any]], real_namespace: str) -> Iterator[Any]:
    """Two objects created while the CRD had no rules, then our CRD back; always restored afterwards."""
    with real_api.api_client() as api:
        try:
            _install(api, _without_rules(_ours()), namespace=real_namespace, refusing=False)
            for example in ("behavior.yaml", "worker-network-topology.yaml"):
                document = renamed(load_example(f"invalid/{example}"), example.removesuffix(".yaml"), real_namespace)
                raw_request(api, "POST", BOOSTERS.format(namespace=real_namespace), body=document)
            _install(api, copy.deepcopy(_ours()), namespace=real_namespace, refusing=True)
            yield api
        finally:
            _install(api, copy.deepcopy(_ours()), namespace=real_namespace, refusing=True)


def _relabel(api: Any, namespace: str, name: str) -> tuple[Any, list[str]]:
    answer, headers = raw_exchange(
        api,
        "PATCH",
        f"{BOOSTERS.format(namespace=namespace)}/{name}",
        body={"metadata": {"labels": {"team": "a"}}},
        content_type=MERGE,
    )
    return answer, [value for key, value in headers if key.lower() == "warning"]


@pytest.mark.parametrize("name", ["behavior", "worker-network-topology"])
def test_a_carried_over_field_does_not_block_relabels_or_status_writes(
    carried_over: Any, real_namespace: str, name: str
) -> None:
    labelled, warnings = _relabel(carried_over, real_namespace, name)
    assert labelled["metadata"]["labels"] == {"team": "a"}
    assert warnings == []
    status = {"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "Invalid", "message": "m",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}  # fmt: skip
    written, _ = raw_exchange(carried_over, "PATCH", f"{BOOSTERS.format(namespace=real_namespace)}/{name}/status",
                              body=status, content_type=MERGE)  # fmt: skip
    assert written["status"]["conditions"][0]["reason"] == "Invalid"


def test_a_backend_that_did_not_have_the_field_is_still_refused(carried_over: Any, real_namespace: str) -> None:
    path = f"{BOOSTERS.format(namespace=real_namespace)}/worker-network-topology"
    stored = raw_request(carried_over, "GET", path)
    backends = stored["spec"]["backends"]
    added = copy.deepcopy(backends[0])
    added["name"] = "second"
    with pytest.raises(ApiException) as refused:
        raw_request(carried_over, "PATCH", path, body={"spec": {"backends": [*backends, added]}}, content_type=MERGE)
    status = json.loads(refused.value.body or "{}")
    (line,) = CEL_LINES["worker-network-topology.yaml"]
    assert (refused.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'ModelBooster.workload.serving.volcano.sh "worker-network-topology" is invalid: '
        + line.replace("backends[0]", "backends[1]")
    )
