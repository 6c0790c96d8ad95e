"""CRD upgrades on a real kube-apiserver v1.36: the documented `kubectl apply --server-side --force-conflicts`
step, re-applying by a second field manager, and the reconciler's outdated-CRD signal against the real server.

The chart's CRDs are shared by the session (`real_crds`); a test that changes one restores it. Changed schemas
are tried on a copy of our ModelBooster CRD in a group of its own, so no other test sees them.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any, Final

import pytest
from kubernetes.client import ApiException

from reconciler.api.kinds import CHILD_KINDS, INFERNO_KINDS, MODEL_BOOSTER
from reconciler.crdcheck.check import EVENT_REASON
from reconciler.crdcheck.settings import CrdCheckSettings
from reconciler.crdcheck.wiring import PEER as CRDCHECK
from reconciler.peer import new_context
from reconciler.runtime.client import KubeClient
from reconciler.runtime.kinds import EVENT
from reconciler.runtime.manager import Manager, ManagerOptions
from reconciler.runtime.metrics import Metrics
from reconciler.settings import ProcessSettings
from shared.crd_digest import DIGEST_ANNOTATION, judge
from shared.crds import expected_digests
from tests.e2e.harness import raw_exchange, raw_request
from tests.realapi.controlplane import RealCluster
from tests.realapi.crds import CRD_PATH, FIELD_MANAGER, ROOT, apply_crds, chart_crds

APPLY: Final = "application/apply-patch+yaml"
COPY_GROUP: Final = "upgrades.realapi.example.com"
CHILD_ROUTES: Final = "modelroutes.networking.serving.volcano.sh"


def _apply(api: Any, crd: dict[str, Any], manager: str, *, force: bool) -> tuple[int, dict[str, Any]]:
    """`kubectl apply --server-side [--force-conflicts]` of one CRD as `manager`: (HTTP status, body); 200 for any
    success (the CRDs exist already, so an apply never creates here)."""
    query = f"fieldManager={manager}" + ("&force=true" if force else "")
    try:
        body = raw_request(api, "PATCH", f"{CRD_PATH}/{crd['metadata']['name']}?{query}", body=crd, content_type=APPLY)
    except ApiException as error:
        return int(error.status), json.loads(error.body or "{}")
    return 200, body


def _modelbooster_copy() -> dict[str, Any]:
    (crd,) = [c for c in chart_crds() if c["spec"]["names"]["kind"] == "ModelBooster"]
    renamed = copy.deepcopy(crd)
    renamed["spec"]["group"] = COPY_GROUP
    renamed["metadata"]["name"] = f"{crd['spec']['names']['plural']}.{COPY_GROUP}"
    return renamed


@pytest.fixture
def modelbooster_copy(real_client: Any) -> Iterator[dict[str, Any]]:
    crd = _modelbooster_copy()
    yield crd
    raw_exchange(real_client, "DELETE", f"{CRD_PATH}/{crd['metadata']['name']}")


def test_reapplying_our_crds_as_another_field_manager_conflicts_with_nothing_and_changes_no_spec(
    real_crds: list[dict[str, Any]], real_client: Any
) -> None:
    for crd in chart_crds():
        before = raw_request(real_client, "GET", f"{CRD_PATH}/{crd['metadata']['name']}")
        status, after = _apply(real_client, copy.deepcopy(crd), "kubectl", force=False)
        assert status == 200, after
        # The first apply by a new manager records its ownership (a write of managedFields), nothing else.
        assert after["metadata"]["generation"] == before["metadata"]["generation"], crd["metadata"]["name"]
        assert after["spec"] == before["spec"]
        _, again = _apply(real_client, copy.deepcopy(crd), "kubectl", force=False)
        assert again["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]


def test_the_documented_step_replaces_a_crd_helm_created_with_a_changed_schema(
    real_client: Any, modelbooster_copy: dict[str, Any]
) -> None:
    older = copy.deepcopy(modelbooster_copy)
    older["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "an older schema"
    del older["metadata"]["annotations"]
    apply_crds(real_client, [older])  # as Helm's install: another field manager (realapi-tests) owns it
    status, refused = _apply(real_client, copy.deepcopy(modelbooster_copy), "kubectl", force=False)
    assert status == 409
    assert refused["message"] == (f'Apply failed with 1 conflict: conflict with "{FIELD_MANAGER}": .spec.versions')
    status, applied = _apply(real_client, copy.deepcopy(modelbooster_copy), "kubectl", force=True)
    assert status == 200, applied
    assert applied["spec"]["versions"] == modelbooster_copy["spec"]["versions"]
    assert applied["metadata"]["annotations"] == modelbooster_copy["metadata"]["annotations"]


@pytest.fixture
def routes_without_digest(real_crds: list[dict[str, Any]], real_client: Any) -> Iterator[str]:
    """The child ModelRoute CRD as an earlier version installed it (no digest annotation), restored afterwards."""
    (crd,) = [c for c in chart_crds() if c["metadata"]["name"] == CHILD_ROUTES]
    # A merge patch, not an apply without it: other appliers (an earlier test's) co-own the annotation.
    unmarked = {"metadata": {"annotations": {DIGEST_ANNOTATION: None}}}
    raw_request(real_client, "PATCH", f"{CRD_PATH}/{CHILD_ROUTES}", body=unmarked,
                content_type="application/merge-patch+json")  # fmt: skip
    try:
        yield CHILD_ROUTES
    finally:
        apply_crds(real_client, [crd])


async def test_an_outdated_crd_on_the_real_server_raises_the_signal(
    real_api: RealCluster, routes_without_digest: str
) -> None:
    client = await KubeClient.connect(kubeconfig=str(real_api.kubeconfig), user_agent="realapi-crd-check")
    manager = Manager(client, options=ManagerOptions(leader_elect=False, shutdown_timeout=1.0), metrics=Metrics())
    context = new_context(manager, ProcessSettings(leader_elect=False), version="9.9.9")
    served = context.discovery
    # Every kind of ours in use, as with the ModelBooster and the Inferno controller registered.
    served.follow((MODEL_BOOSTER, *CHILD_KINDS, *INFERNO_KINDS))
    CRDCHECK.register(context, CrdCheckSettings())
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    registry = manager.metrics.registry
    try:
        for _ in range(200):
            if registry.get_sample_value("modelbooster_crd_outdated", {"crd": routes_without_digest}) == 1:
                break
            await asyncio.sleep(0.05)
        assert registry.get_sample_value("modelbooster_crd_outdated", {"crd": routes_without_digest}) == 1
        outdated = {
            name for name in (crd["metadata"]["name"] for crd in chart_crds())
            if registry.get_sample_value("modelbooster_crd_outdated", {"crd": name}) == 1
        }  # fmt: skip
        assert outdated == {routes_without_digest}
        assert manager.ready()
        events: list[dict[str, Any]] = []
        for _ in range(100):
            listed = await client.list(EVENT, namespace="default", field_selector=f"reason={EVENT_REASON}")
            events = [e for e in listed.items if e["involvedObject"]["name"] == routes_without_digest]
            if events:
                break
            await asyncio.sleep(0.05)
        (event,) = events  # accepted by kube-apiserver's Event validation for a cluster-scoped object
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "CustomResourceDefinition"
        assert "no digest annotation" in event["message"]
        assert DIGEST_ANNOTATION not in (served.crds()[routes_without_digest].annotations)
    finally:
        stop.set()
        await task
        await client.close()
        await asyncio.sleep(0.1)  # TLS transports finish closing on the next loop iterations


def _documented_crd_commands() -> list[list[str]]:
    """The `kubectl apply` lines of the first shell block of docs/chart.md's "Upgrades" section, as argv."""
    text = (ROOT / "docs" / "chart.md").read_text()
    upgrades = text[text.index("### Upgrades, CRDs and uninstalling") :]
    block = upgrades[upgrades.index("```sh") + len("```sh") : upgrades.index("```", upgrades.index("```sh") + 5)]
    commands = [shlex.split(line, comments=True) for line in block.splitlines() if line.startswith("kubectl apply")]
    assert commands, "docs/chart.md's Upgrades section shows no kubectl apply of the CRDs"
    return commands


@pytest.fixture
def crds_of_an_earlier_version(real_crds: list[dict[str, Any]], real_client: Any) -> Iterator[list[str]]:
    """The chart's CRDs without their digest annotation, as 0.1.0 installed them; current again afterwards."""
    names = [crd["metadata"]["name"] for crd in chart_crds()]
    unmarked = {"metadata": {"annotations": {DIGEST_ANNOTATION: None}}}
    for name in names:
        raw_request(real_client, "PATCH", f"{CRD_PATH}/{name}", body=unmarked,
                    content_type="application/merge-patch+json")  # fmt: skip
    try:
        yield names
    finally:
        apply_crds(real_client, chart_crds())


def test_the_documented_commands_work_as_written(
    real_api: RealCluster, real_client: Any, crds_of_an_earlier_version: list[str]
) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the documented commands are run with it")
    expected = expected_digests()
    for name in crds_of_an_earlier_version:
        stored = raw_request(real_client, "GET", f"{CRD_PATH}/{name}")
        annotations = stored["metadata"].get("annotations") or {}  # none left: the API omits an empty map
        assert judge(name, expected=expected[name], served_annotations=annotations).outdated
    environment = {**os.environ, "KUBECONFIG": str(real_api.kubeconfig)}
    for argv in _documented_crd_commands():
        done = subprocess.run(
            [kubectl, *argv[1:]], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{shlex.join(argv)}: {done.stderr}"
    by_name = {crd["metadata"]["name"]: crd for crd in chart_crds()}
    for name in crds_of_an_earlier_version:
        stored = raw_request(real_client, "GET", f"{CRD_PATH}/{name}")
        annotations = stored["metadata"].get("annotations")
        assert judge(name, expected=expected[name], served_annotations=annotations).verdict == "current"
        assert stored["spec"]["versions"] == by_name[name]["spec"]["versions"], name
