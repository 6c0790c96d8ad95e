"""The optimizer REST app under aiohttp's test client, and request bodies shaped like the reference's."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient

from optimizer.rest.app import make_app

# The server of docs/design/inferno.md §12 in the legacy wire format: granite on G2 (cost 23), 60 rpm of 1024
# tokens, ITL 40, TTW 500.
G2 = {"name": "G2", "type": "G2", "multiplicity": 1, "memSize": 24, "memBW": 300, "cost": 23}
A100 = {"name": "A100", "type": "A100", "multiplicity": 1, "cost": 40}
GRANITE_G2 = {
    "name": "granite",
    "acc": "G2",
    "accCount": 1,
    "alpha": 17.15,
    "beta": 0.34,
    "maxBatchSize": 38,
    "atTokens": 512,
}
PREMIUM = {"name": "Premium", "priority": 1, "modelTargets": [{"model": "granite", "slo-itl": 40, "slo-ttw": 500}]}
SERVER = {
    "name": "Premium-granite_13b",
    "class": "Premium",
    "model": "granite",
    "currentAlloc": {"accelerator": "", "numReplicas": 0, "load": {"arrivalRate": 60, "avgLength": 1024}},
}
FLAGS = {"unlimited": False, "heterogeneous": False, "milpSolver": False, "useCplex": False}


def worked_example() -> dict[str, Any]:
    return copy.deepcopy(
        {
            "system": {
                "acceleratorData": {"accelerators": [G2]},
                "modelData": {"models": [GRANITE_G2]},
                "serviceClassData": {"serviceClasses": [PREMIUM]},
                "serverData": {"servers": [SERVER]},
                "optimizerData": {"optimizer": FLAGS},
                "capacityData": {"count": [{"type": "G2", "count": 8}]},
            }
        }
    )


@pytest.fixture
async def stateful(aiohttp_client: AiohttpClient) -> TestClient[Any, Any]:
    return await aiohttp_client(make_app(stateful=True))


@pytest.fixture
async def stateless(aiohttp_client: AiohttpClient) -> TestClient[Any, Any]:
    return await aiohttp_client(make_app())
