"""Bad input, routes per mode, health, metrics, reply format and the command line."""

from __future__ import annotations

import argparse
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from modelbooster.cli import build_parser
from optimizer.rest import cli
from tests.inferno_rest.conftest import FLAGS, G2, GRANITE_G2, PREMIUM, SERVER, worked_example
from tests.pydantic_words import says

Client = TestClient[Any, Any]


async def message(client: Client, path: str, body: Any = None, *, raw: bytes | None = None) -> tuple[int, str]:
    if raw is not None:
        response = await client.post(path, data=raw, headers={"Content-Type": "application/json"})
    else:
        response = await client.post(path, json=body)
    return response.status, (await response.json())["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/setAccelerators",
        "/addAccelerator",
        "/setCapacities",
        "/setCapacity",
        "/setModels",
        "/addModelAcceleratorPerf",
        "/setServiceClasses",
        "/addServiceClassModelTargets",
        "/addServiceClassModelTarget",
        "/setServers",
        "/addServer",
        "/optimize",
        "/optimizeOne",
    ],
)
async def test_every_post_rejects_malformed_json(stateful: Client, path: str) -> None:
    status, reason = await message(stateful, path, raw=b"{not json")
    assert status == 400
    assert reason.startswith("body is not valid JSON: ")
    status, reason = await message(stateful, path, [1, 2])
    assert (status, reason) == (400, "body must be a JSON object, got list")


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        ("/addAccelerator", {"name": "G2", "type": "G2"}, f"cost: {says('missing')}"),
        ("/addAccelerator", {**G2, "cost": -1}, f"cost: {says('greater_than', gt=0)}"),
        ("/addAccelerator", {**G2, "multiplicity": 0}, f"multiplicity: {says('greater_than_equal', ge=1)}"),
        ("/setAccelerators", {"accelerators": [G2, G2]}, "body: duplicate accelerator name 'G2'"),
        ("/setCapacity", {"type": "G2", "count": -3}, f"count: {says('greater_than_equal', ge=0)}"),
        ("/setCapacities", {"count": [{"count": 3}]}, f"count.0.type: {says('missing')}"),
        (
            "/setModels",
            {"models": [{**GRANITE_G2, "maxBatchSize": 0}]},
            f"models.0.maxBatchSize: {says('greater_than_equal', ge=1)}",
        ),
        ("/addModelAcceleratorPerf", {**GRANITE_G2, "alpha": 0, "beta": 0}, "alpha and beta cannot both be 0"),
        (
            "/setServiceClasses",
            {"serviceClasses": [{**PREMIUM, "priority": 0}]},
            f"serviceClasses.0.priority: {says('greater_than_equal', ge=1)}",
        ),
        ("/addServiceClassModelTargets", {**PREMIUM, "priority": 101}, f"priority: {says('less_than_equal', le=100)}"),
        (
            "/addServiceClassModelTarget",
            {"name": "Premium", "model": "g", "slo-itl": -1},
            f"slo-itl: {says('greater_than_equal', ge=0)}",
        ),
        ("/addServer", {**SERVER, "minNumReplicas": -1}, f"minNumReplicas: {says('greater_than_equal', ge=0)}"),
        (
            "/setServers",
            {"servers": [{**SERVER, "currentAlloc": {"load": {"arrivalRate": -5}}}]},
            f"servers.0.currentAlloc.load.arrivalRate: {says('greater_than_equal', ge=0)}",
        ),
        ("/addServer", {"class": "Premium"}, f"name: {says('missing')}; model: {says('missing')}"),
        ("/optimize", {**FLAGS, "saturationPolicy": "Fair"}, "saturationPolicy: "),
        ("/optimize", {**FLAGS, "unlimited": "perhaps"}, f"unlimited: {says('bool_parsing')}"),
        ("/optimizeOne", {"acceleratorData": {}}, f"system: {says('missing')}"),
    ],
)
async def test_invalid_bodies_get_400_with_the_reason(stateful: Client, path: str, body: Any, expected: str) -> None:
    status, reason = await message(stateful, path, body)
    assert status == 400
    assert expected in reason


async def test_an_empty_saturation_policy_means_none(stateful: Client) -> None:
    response = await stateful.post("/optimize", json={**FLAGS, "saturationPolicy": ""})
    assert (response.status, await response.json()) == (200, {"allocations": {}})


async def test_stateless_mode_serves_reads_and_optimize_one_only(stateless: Client) -> None:
    for path in ("/getAccelerators", "/getCapacities", "/getModels", "/getServiceClasses", "/getServers"):
        assert (await stateless.get(path)).status == 200
    for path in ("/addModel/x", "/removeServer/x", "/applyAllocation"):
        assert (await stateless.get(path)).status == 404
    for path in ("/setAccelerators", "/addServer", "/optimize"):
        assert (await stateless.post(path, json={})).status in (404, 405)


async def test_health_endpoints(stateless: Client) -> None:
    for path in ("/healthz", "/readyz"):
        response = await stateless.get(path)
        assert (response.status, await response.text()) == (200, "ok")


async def test_metrics_count_requests_and_runs(stateless: Client) -> None:
    await stateless.post("/optimizeOne", json=worked_example())
    await stateless.post("/optimizeOne", data=b"[")
    response = await stateless.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    text = await response.text()
    assert 'inferno_optimizer_runs_total{result="success"} 1.0' in text
    assert 'inferno_optimizer_http_requests_total{code="200",method="POST",route="/optimizeOne"} 1.0' in text
    assert 'inferno_optimizer_http_requests_total{code="400",method="POST",route="/optimizeOne"} 1.0' in text
    assert 'inferno_optimizer_last_run_servers{state="allocated"} 1.0' in text
    assert "inferno_optimizer_last_run_cost 46.0" in text
    assert "inferno_optimizer_run_duration_seconds_count 1.0" in text


async def test_replies_are_indented_and_print_whole_numbers_as_integers(stateless: Client) -> None:
    response = await stateless.post("/optimizeOne", json=worked_example())
    assert response.content_type == "application/json"
    text = await response.text()
    assert text.startswith('{\n    "allocations": {\n        "Premium-granite_13b": {')
    assert '"cost": 46,' in text
    assert '"arrivalRate": 60,' in text


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(argv)


def test_command_line_defaults_and_environment() -> None:
    args = parse([])
    assert (args.stateful, args.log_level) == (False, "info")
    assert cli.listen_address(args, {}) == (None, 8080)
    assert cli.listen_address(args, {"INFERNO_HOST": "127.0.0.1", "INFERNO_PORT": "3302"}) == ("127.0.0.1", 3302)
    flagged = parse(["-F", "--host", "0.0.0.0", "--port", "9000"])
    assert flagged.stateful
    assert cli.listen_address(flagged, {"INFERNO_PORT": "3302"}) == ("0.0.0.0", 9000)
    with pytest.raises(ValueError, match="INFERNO_PORT='eighty' is not a port number"):
        cli.listen_address(args, {"INFERNO_PORT": "eighty"})
    with pytest.raises(ValueError, match=r"port 70000 is outside 1\.\.65535"):
        cli.listen_address(args, {"INFERNO_PORT": "70000"})
    with pytest.raises(SystemExit):  # a bad flag is a usage error at parse time
        parse(["--port", "70000"])


def test_run_refuses_a_bad_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERNO_PORT", "eighty")
    assert cli.run(parse(["--log-level", "ERROR"])) == 2


def test_the_optimizer_subcommand_is_wired() -> None:
    args = build_parser().parse_args(["optimizer", "-F", "--port", "3302"])
    assert args.stateful
    assert args.port == 3302
