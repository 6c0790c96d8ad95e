"""The differential suite: every scenario of tests/realapi/scenarios.py against the fake and the real API server,
compared facet by facet (tests/realapi/differential.py). A difference fails unless `ALLOWED` lists it with the
reason; an `ALLOWED` entry that no longer differs fails too.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.apiserver.widgets import WIDGET_CRD
from tests.fakeapi.server import FakeApiServer
from tests.realapi.controlplane import RealCluster
from tests.realapi.crds import apply_crds, chart_crds
from tests.realapi.differential import SUITE_SIZE, Allowed, Recorder, checks, compare, unexplained
from tests.realapi.scenarios import SCENARIOS
from tests.realapi.webhook import WebhookServer

# Known differences, by scenario and step: what the fake does otherwise and why that is accepted. Anything else
# the two servers answer differently is a fake bug.
ALLOWED: dict[str, dict[str, Allowed]] = {
    "create_refusals": {
        # Both answer 400 BadRequest. kube-apiserver's message names the Go struct its decoder tried and the
        # body's bytes in hex; the fake says in one line what it got. Nothing reads these words.
        "not JSON": Allowed("the Go decoder's wording for a body that is not an object", ("message",)),
        # Both answer 400 BadRequest. kube-apiserver decodes the body as the kind it names (a Secret, whose
        # `data` must be base64) and reports that decoder's error; the fake names the kind mismatch.
        "wrong kind": Allowed("the Go decoder's wording for a body of another kind", ("message",)),
    },
    "delete_preconditions_and_options": {
        # The garbage collector finishes a foreground deletion. The fake's runs inside it and has removed the
        # object before the next request; this suite's real server runs without kube-controller-manager, so
        # the object waits with `foregroundDeletion` (test_reconciler.py exercises the real collector).
        "cr after foreground": Allowed(
            "the fake's garbage collector acts at once", ("body", "code", "details", "message", "reason")
        ),
    },
}


@pytest.fixture(scope="session")
def diff_real(real_api: RealCluster, real_crds: list[dict[str, Any]]) -> Iterator[Any]:
    with real_api.api_client() as api:
        apply_crds(api, [WIDGET_CRD])
        yield api


@pytest.fixture(scope="session")
def diff_fake(real_api: RealCluster) -> Iterator[Any]:
    """The fake with the same CRDs, installed the same way (needs `real_api` only so it is skipped with it)."""
    from kubernetes import client

    fake = FakeApiServer()
    fake.start_in_thread()
    try:
        with client.ApiClient(fake.configuration()) as api:
            apply_crds(api, [*chart_crds(), WIDGET_CRD])
            yield api
    finally:
        fake.stop_thread()


def _namespace(api: Any, name: str) -> None:
    Recorder(api, name).send("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                                   "metadata": {"name": name}})  # fmt: skip


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fake_answers_like_the_real_server(
    name: str, diff_fake: Any, diff_real: Any, real_webhook_server: WebhookServer, request: pytest.FixtureRequest
) -> None:
    namespace = f"d-{uuid.uuid4().hex[:10]}"
    runs = {}
    for label, api in (("fake", diff_fake), ("real", diff_real)):
        _namespace(api, namespace)
        recorder = Recorder(api, namespace, webhook=real_webhook_server)
        SCENARIOS[name](recorder)
        runs[label] = recorder.steps
    differences = compare(runs["fake"], runs["real"])
    unexpected, stale = unexplained(name, differences, ALLOWED)
    size = request.config.stash.setdefault(SUITE_SIZE, {})
    size[name] = (checks(runs["real"]), len(differences) - len(unexpected))
    report = "\n".join(str(d) for d in unexpected)
    assert not unexpected, f"{len(unexpected)} unexplained difference(s) in {name}:\n{report}"
    assert not stale, f"allow-listed differences that did not occur in {name}: {stale}"
