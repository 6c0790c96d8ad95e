"""POST /optimizeOne, POST /optimize and GET /applyAllocation."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from optimizer.milp import milp_available
from tests.inferno_rest.conftest import FLAGS, G2, GRANITE_G2, PREMIUM, SERVER, worked_example

Client = TestClient[Any, Any]

LOAD = {"arrivalRate": 60, "avgLength": 1024, "arrivalCOV": 0, "serviceCOV": 0}


def assert_worked_example(allocation: dict[str, Any]) -> None:
    # docs/design/inferno.md §12, legacy: 2 x G2, maxBatch 19, cost 46, itl 21.16437, wait 102.09766.
    assert {k: allocation[k] for k in ("accelerator", "numReplicas", "maxBatch", "cost")} == {
        "accelerator": "G2",
        "numReplicas": 2,
        "maxBatch": 19,
        "cost": 46,
    }
    assert allocation["itlAverage"] == pytest.approx(21.16437, rel=6e-6)
    assert allocation["waitAverage"] == pytest.approx(102.09766, abs=0.01)
    assert allocation["load"] == LOAD


async def test_optimize_one_returns_the_allocation_solution(stateless: Client) -> None:
    response = await stateless.post("/optimizeOne", json=worked_example())
    assert response.status == 200
    body = await response.json()
    assert list(body) == ["allocations"]
    assert list(body["allocations"]) == ["Premium-granite_13b"]
    assert_worked_example(body["allocations"]["Premium-granite_13b"])
    # Stateless: the posted system is now the held one, with desiredAlloc filled.
    servers = (await (await stateless.get("/getServers")).json())["servers"]
    assert_worked_example(servers[0]["desiredAlloc"])
    accelerators = await (await stateless.get("/getAccelerators")).json()
    assert [a["name"] for a in accelerators] == ["G2"]


async def test_keys_match_case_insensitively_and_unknown_keys_are_ignored(stateless: Client) -> None:
    server = {key: value for key, value in SERVER.items() if key != "currentAlloc"}
    server["CurrentAlloc"] = SERVER["currentAlloc"]
    body = {
        "SYSTEM": {
            "acceleratordata": {"Accelerators": [{"NAME": "G2", "Type": "G2", "cost": 23, "vendor": "x"}]},
            "ModelData": {"models": [{k.lower(): v for k, v in GRANITE_G2.items()}]},
            "serviceclassdata": {"serviceclasses": [PREMIUM]},
            "serverData": {"Servers": [server]},
            "optimizerdata": {"OPTIMIZER": {"milpsolver": False, "UNLIMITED": True}},
            "capacityData": {"count": []},
        },
        "comment": "ignored",
    }
    response = await stateless.post("/optimizeOne", json=body)
    assert response.status == 200
    assert_worked_example((await response.json())["allocations"]["Premium-granite_13b"])


async def test_an_infeasible_server_is_absent(stateless: Client) -> None:
    system = worked_example()
    # 17 ms per token cannot be met: even alone a request gets a token every 17.49 ms.
    system["system"]["serviceClassData"]["serviceClasses"][0]["modelTargets"][0]["slo-itl"] = 17
    response = await stateless.post("/optimizeOne", json=system)
    assert (response.status, await response.json()) == (200, {"allocations": {}})


async def test_references_to_unknown_objects_are_a_400(stateless: Client) -> None:
    system = worked_example()
    system["system"]["serverData"]["servers"][0]["class"] = "Gold"
    response = await stateless.post("/optimizeOne", json=system)
    assert response.status == 400
    assert await response.json() == {
        "message": "invalid system: server Premium-granite_13b: unknown service class 'Gold'"
    }


async def test_capacity_limits_apply_unless_unlimited(stateless: Client) -> None:
    system = worked_example()
    system["system"]["capacityData"]["count"] = [{"type": "G2", "count": 1}]
    limited = await (await stateless.post("/optimizeOne", json=system)).json()
    assert limited == {"allocations": {}}
    system["system"]["optimizerData"]["optimizer"]["unlimited"] = True
    unlimited = await (await stateless.post("/optimizeOne", json=system)).json()
    assert unlimited["allocations"]["Premium-granite_13b"]["numReplicas"] == 2


async def test_stateful_optimize_uses_the_held_system(stateful: Client) -> None:
    await stateful.post("/setAccelerators", json={"accelerators": [G2]})
    await stateful.post("/setModels", json={"models": [GRANITE_G2]})
    await stateful.post("/setServiceClasses", json={"serviceClasses": [PREMIUM]})
    await stateful.post("/setServers", json={"servers": [SERVER]})
    await stateful.post("/setCapacities", json={"count": [{"type": "G2", "count": 8}]})
    response = await stateful.post("/optimize", json=FLAGS)
    assert response.status == 200
    assert_worked_example((await response.json())["allocations"]["Premium-granite_13b"])
    server = await (await stateful.get("/getServer/Premium-granite_13b")).json()
    assert server["currentAlloc"]["accelerator"] == ""
    assert_worked_example(server["desiredAlloc"])
    # applyAllocation makes the desired allocation (load included) the current one.
    response = await stateful.get("/applyAllocation")
    assert (response.status, await response.json()) == (200, "Done")
    server = await (await stateful.get("/getServer/Premium-granite_13b")).json()
    assert_worked_example(server["currentAlloc"])
    # A second run with nothing changed keeps the allocation.
    again = await (await stateful.post("/optimize", json=FLAGS)).json()
    assert again["allocations"]["Premium-granite_13b"]["numReplicas"] == 2


async def test_optimize_one_in_stateful_mode_keeps_the_held_system(stateful: Client) -> None:
    await stateful.post("/addAccelerator", json={"name": "A100", "type": "A100", "cost": 40})
    response = await stateful.post("/optimizeOne", json=worked_example())
    assert response.status == 200
    assert [a["name"] for a in await (await stateful.get("/getAccelerators")).json()] == ["A100"]


async def test_milp_without_scipy_is_an_optimization_error(stateless: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    system = worked_example()
    system["system"]["optimizerData"]["optimizer"]["milpSolver"] = True
    response = await stateless.post("/optimizeOne", json=system)
    assert response.status == 404
    assert await response.json() == {"message": "optimization error: MILP solver requires the 'milp' extra (scipy)"}


@pytest.mark.skipif(not milp_available(), reason="SciPy (the 'milp' extra) is not installed")
async def test_milp_modes(stateless: Client) -> None:
    system = worked_example()
    system["system"]["optimizerData"]["optimizer"].update(milpSolver=True, useCplex=True)
    single = await (await stateless.post("/optimizeOne", json=system)).json()
    assert_worked_example(single["allocations"]["Premium-granite_13b"])
    system["system"]["capacityData"]["count"] = [{"type": "G2", "count": 1}]
    response = await stateless.post("/optimizeOne", json=system)
    assert response.status == 404
    assert (await response.json())["message"].startswith("optimization error: MILP single assignment is infeasible")
