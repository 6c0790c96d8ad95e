"""The stateful CRUD endpoints of docs/design/inferno.md §10, one resource at a time."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.inferno_rest.conftest import A100, G2, GRANITE_G2, PREMIUM, SERVER

Client = TestClient[Any, Any]


async def get(client: Client, path: str) -> tuple[int, Any]:
    response = await client.get(path)
    return response.status, await response.json()


async def post(client: Client, path: str, body: Any) -> tuple[int, Any]:
    response = await client.post(path, json=body)
    return response.status, await response.json()


async def test_accelerators(stateful: Client) -> None:
    assert await get(stateful, "/getAccelerators") == (200, [])
    status, echo = await post(stateful, "/setAccelerators", {"accelerators": [G2]})
    assert status == 200
    assert echo == {"accelerators": [G2]}
    status, echo = await post(stateful, "/addAccelerator", {**A100, "multiplicity": 2})
    assert (status, echo["multiplicity"]) == (200, 2)
    # setAccelerators adds or replaces by name and leaves the others alone.
    await post(stateful, "/setAccelerators", {"accelerators": [A100]})
    status, listed = await get(stateful, "/getAccelerators")  # a bare array
    assert status == 200
    assert sorted(a["name"] for a in listed) == ["A100", "G2"]
    filled = {**A100, "memSize": 0, "memBW": 0}  # missing keys come back as zero values, as from Go
    assert await get(stateful, "/getAccelerator/A100") == (200, filled)
    assert await get(stateful, "/removeAccelerator/A100") == (200, filled)
    assert await get(stateful, "/getAccelerator/A100") == (404, {"message": "accelerator A100 not found"})
    assert await get(stateful, "/removeAccelerator/A100") == (404, {"message": "accelerator A100 not found"})


async def test_capacities(stateful: Client) -> None:
    assert await get(stateful, "/getCapacities") == (200, {"count": []})
    body = {"count": [{"type": "A100", "count": 4}, {"type": "G2", "count": 8}]}
    assert await post(stateful, "/setCapacities", body) == (200, body)
    assert await post(stateful, "/setCapacity", {"type": "G2", "count": 2}) == (200, {"type": "G2", "count": 2})
    assert await get(stateful, "/getCapacities") == (
        200,
        {"count": [{"type": "A100", "count": 4}, {"type": "G2", "count": 2}]},
    )
    assert await get(stateful, "/getCapacity/G2") == (200, {"type": "G2", "count": 2})
    assert await get(stateful, "/removeCapacity/G2") == (200, {"type": "G2", "count": 2})
    status, body = await get(stateful, "/getCapacity/G2")
    assert (status, body["message"]) == (404, "capacity for accelerator type G2 not found")
    assert (await get(stateful, "/removeCapacity/G2"))[0] == 404


async def test_models_and_perf_data(stateful: Client) -> None:
    assert await get(stateful, "/getModels") == (200, [])
    assert await post(stateful, "/setModels", {"models": [GRANITE_G2]}) == (200, {"models": [GRANITE_G2]})
    assert await get(stateful, "/getModels") == (200, ["granite"])
    assert await get(stateful, "/getModel/granite") == (200, {"models": [GRANITE_G2]})
    assert await get(stateful, "/getModelAcceleratorPerf/granite/G2") == (200, GRANITE_G2)
    on_a100 = {**GRANITE_G2, "acc": "A100", "alpha": 12.0}
    assert await post(stateful, "/addModelAcceleratorPerf", on_a100) == (200, on_a100)
    assert await get(stateful, "/removeModelAcceleratorPerf/granite/A100") == (200, on_a100)
    status, body = await get(stateful, "/getModelAcceleratorPerf/granite/A100")
    assert (status, body["message"]) == (404, "model granite has no data for accelerator A100")
    # addModel replaces an existing model with an empty one (reference behaviour).
    assert await get(stateful, "/addModel/granite") == (200, "granite")
    assert await get(stateful, "/getModel/granite") == (200, {"models": []})
    assert await get(stateful, "/removeModel/granite") == (200, "granite")
    assert await get(stateful, "/getModel/granite") == (404, {"message": "model granite not found"})
    assert await get(stateful, "/removeModel/granite") == (404, {"message": "model granite not found"})
    # Perf data for a model that was never added is refused.
    assert await post(stateful, "/addModelAcceleratorPerf", {**GRANITE_G2, "name": "llama"}) == (
        404,
        {"message": "model llama not found"},
    )


async def test_service_classes_and_targets(stateful: Client) -> None:
    assert await get(stateful, "/getServiceClasses") == (200, {"serviceClasses": []})
    assert await post(stateful, "/setServiceClasses", {"serviceClasses": [PREMIUM]}) == (
        200,
        {
            "serviceClasses": [
                {**PREMIUM, "modelTargets": [{"model": "granite", "slo-itl": 40, "slo-ttw": 500, "slo-tps": 0}]}
            ]
        },
    )
    status, premium = await get(stateful, "/getServiceClass/Premium")
    assert (status, premium["priority"]) == (200, 1)
    assert await get(stateful, "/getServiceClassModelTarget/Premium/granite") == (
        200,
        {"model": "granite", "slo-itl": 40, "slo-ttw": 500, "slo-tps": 0},
    )
    assert await get(stateful, "/addServiceClass/Free/2") == (200, {"name": "Free", "priority": 2, "modelTargets": []})
    more = {"name": "Free", "priority": 2, "modelTargets": [{"model": "granite", "slo-itl": 80}]}
    status, updated = await post(stateful, "/addServiceClassModelTargets", more)
    assert status == 200
    assert updated["modelTargets"] == [{"model": "granite", "slo-itl": 80, "slo-ttw": 0, "slo-tps": 0}]
    # The singular, flat form used by the reference controller adds (or replaces) one target.
    flat = {"name": "Free", "priority": 2, "model": "llama", "slo-ttw": 2000}
    status, updated = await post(stateful, "/addServiceClassModelTarget", flat)
    assert status == 200
    assert [t["model"] for t in updated["modelTargets"]] == ["granite", "llama"]
    assert await get(stateful, "/removeServiceClassModelTarget/Free/granite") == (
        200,
        {"model": "granite", "slo-itl": 80, "slo-ttw": 0, "slo-tps": 0},
    )
    status, body = await get(stateful, "/getServiceClassModelTarget/Free/granite")
    assert (status, body["message"]) == (404, "service class Free has no target for model granite")
    assert (await get(stateful, "/removeServiceClassModelTarget/Free/granite"))[0] == 404
    assert await get(stateful, "/getServiceClass/Gold") == (404, {"message": "service class Gold not found"})


async def test_adding_targets_checks_class_and_priority(stateful: Client) -> None:
    # Unknown class: 404 whose body is a JSON string (reference behaviour).
    assert await post(stateful, "/addServiceClassModelTargets", {**PREMIUM, "name": "Gold"}) == (
        404,
        "service class Gold not found",
    )
    await get(stateful, "/addServiceClass/Premium/1")
    status, body = await post(stateful, "/addServiceClassModelTargets", {**PREMIUM, "priority": 3})
    assert (status, body["message"]) == (400, "priority 3 does not match service class Premium's priority 1")
    status, body = await get(stateful, "/addServiceClass/Gold/high")
    assert (status, body["message"]) == (400, "priority 'high' is not an integer")
    status, body = await get(stateful, "/addServiceClass/Gold/0")
    assert (status, body["message"]) == (400, "priority 0 is outside 1..100")


async def test_servers(stateful: Client) -> None:
    assert await get(stateful, "/getServers") == (200, {"servers": []})
    status, echo = await post(stateful, "/setServers", {"servers": [SERVER]})
    assert status == 200
    assert echo["servers"][0]["currentAlloc"]["load"] == {
        "arrivalRate": 60,
        "avgLength": 1024,
        "arrivalCOV": 0,
        "serviceCOV": 0,
    }
    other = {**SERVER, "name": "Free-granite", "class": "Free", "minNumReplicas": 1}
    status, echo = await post(stateful, "/addServer", other)
    assert (status, echo["minNumReplicas"]) == (200, 1)
    status, listed = await get(stateful, "/getServers")
    assert [s["name"] for s in listed["servers"]] == ["Premium-granite_13b", "Free-granite"]
    status, one = await get(stateful, "/getServer/Free-granite")
    assert (status, one["class"], one["desiredAlloc"]["accelerator"]) == (200, "Free", "")
    status, removed = await get(stateful, "/removeServer/Free-granite")
    assert (status, removed["name"]) == (200, "Free-granite")
    assert await get(stateful, "/getServer/Free-granite") == (404, {"message": "server Free-granite not found"})
    assert (await get(stateful, "/removeServer/Free-granite"))[0] == 404
