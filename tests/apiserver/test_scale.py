"""The fake's scale subresource, as kube-apiserver serves it for a CRD with `subresources.scale` (our
ModelServing CRD): a Scale read from the CRD's paths, and writes of it landing in the object."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator

import pytest

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.runtime.client import ApiError, KubeClient
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, crd_documents

SERVING = {
    "apiVersion": MODEL_SERVING.api_version,
    "kind": MODEL_SERVING.kind,
    "metadata": {"name": "m-a", "namespace": NS},
    "spec": {
        "replicas": 2,
        "schedulerName": "volcano",
        "template": {
            "roles": [
                {"name": "leader", "replicas": 1, "workerReplicas": 0, "entryTemplate": {"spec": {"containers": []}}}
            ]
        },
    },
}


@pytest.fixture
async def client(fake_apiserver_inloop: FakeApiServer) -> AsyncIterator[KubeClient]:
    for document in crd_documents():
        fake_apiserver_inloop.register_crd(copy.deepcopy(document))
    fake_apiserver_inloop.create_namespace(NS)
    kube = KubeClient.for_configuration(fake_apiserver_inloop.aio_configuration(), user_agent="test")
    try:
        yield kube
    finally:
        await kube.close()


async def test_scale_reads_and_writes_the_replicas_paths(client: KubeClient) -> None:
    await client.create(MODEL_SERVING, copy.deepcopy(SERVING))
    await client.patch(
        MODEL_SERVING, NS, "m-a", {"status": {"replicas": 1, "labelSelector": "app=x"}}, subresource="status"
    )
    _, scale = await client.request("GET", MODEL_SERVING.object_path(NS, "m-a", "scale"))
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=x"}

    written = await client.patch(MODEL_SERVING, NS, "m-a", {"spec": {"replicas": 5}}, subresource="scale")
    assert written["spec"] == {"replicas": 5}
    stored = await client.get(MODEL_SERVING, NS, "m-a")
    assert stored["spec"]["replicas"] == 5
    assert stored["metadata"]["generation"] == 2


async def test_a_negative_scale_is_refused(client: KubeClient) -> None:
    await client.create(MODEL_SERVING, copy.deepcopy(SERVING))
    with pytest.raises(ApiError) as caught:
        await client.patch(MODEL_SERVING, NS, "m-a", {"spec": {"replicas": -1}}, subresource="scale")
    assert caught.value.status == 422


async def test_discovery_lists_the_scale_subresource(client: KubeClient) -> None:
    _, listed = await client.request("GET", f"/apis/{MODEL_SERVING.api_version}")
    names = {resource["name"] for resource in listed["resources"]}
    assert "modelservings/scale" in names
