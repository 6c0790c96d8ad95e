"""A new controller is a peer and one more line in the process's list of peers (docs/design/structure.md §2).

The greeter below is the smallest such peer, written as a package's modules would hold it: its settings and
flags, its reconcile (a `Controller` over labelled ConfigMaps, writing a greeting into each), its `register` and
its `PEER`. Added to `assembly.PEERS` with one line, its flags are on the command line, its settings come from
them, and against the fake API server it registers beside the ModelBooster controller and reconciles.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from process.flags import Flag, add_flags
from reconciler.assembly import PEERS, ReconcilerSettings, build
from reconciler.main import add_arguments, settings_from_args
from reconciler.modelbooster.wiring import PEER as MODELBOOSTER
from reconciler.peer import Context, Peer
from reconciler.runtime.client import KubeClient
from reconciler.runtime.controller import Controller, Result
from reconciler.runtime.kinds import CONFIG_MAP
from reconciler.runtime.metrics import Metrics
from reconciler.runtime.ratelimit import default_controller_rate_limiter
from reconciler.runtime.source import ObjectKey
from reconciler.settings import ENV_PREFIX
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import FAST, NS, eventually

GREET_LABEL: Final = "greeter.example.com/greet"


# --- what the package's settings.py would hold -------------------------------------------------------------------
@dataclass(frozen=True)
class GreeterSettings:
    greeting: str = "hello"


_FLAGS: Final = {"--greeter-greeting": Flag("greeter_greeting", str, "hello", "what the greeter writes")}


def add_greeter_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    add_flags(parser, _FLAGS, prefix=ENV_PREFIX, parser=parser, environ=environ)


def greeter_settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> GreeterSettings:
    del environ
    return GreeterSettings(greeting=args.greeter_greeting)


# --- its controller.py and wiring.py ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Greeter:
    controller: Controller


def register(context: Context, settings: GreeterSettings) -> Greeter:
    config_maps = context.manager.informer(
        CONFIG_MAP, namespaces=context.settings.namespaces, label_selector=f"{GREET_LABEL}=yes"
    )

    async def reconcile(key: ObjectKey) -> Result:
        config_map = config_maps.get(key.namespace, key.name)
        greeting = f"{settings.greeting}, {key.name}"
        if config_map is not None and (config_map.get("data") or {}).get("greeting") != greeting:
            await context.client.patch(CONFIG_MAP, key.namespace, key.name, {"data": {"greeting": greeting}},
                                       field_manager=context.settings.field_manager)  # fmt: skip
        return Result()

    controller = Controller(
        name="greeter",
        reconcile=reconcile,
        workers=1,
        rate_limiter=default_controller_rate_limiter(),
        metrics=context.manager.metrics,
    )
    controller.watch(config_maps, primary=True)
    context.manager.add_controller(controller)
    return Greeter(controller)


GREETER: Final = Peer(
    name="greeter", default_settings=GreeterSettings, add_arguments=add_greeter_arguments,
    settings_from_args=greeter_settings_from_args, register=register,
)  # fmt: skip

# --- the one line: the process's peers with the greeter ----------------------------------------------------------
WITH_GREETER: Final = (*PEERS, GREETER)


def _parse(argv: list[str], environ: dict[str, str]) -> ReconcilerSettings:
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ=environ, peers=WITH_GREETER)
    return settings_from_args(parser.parse_args(argv), environ=environ, peers=WITH_GREETER)


def test_its_flags_are_on_the_command_line_and_its_settings_come_from_them() -> None:
    assert _parse([], {}).of(GREETER) == GreeterSettings()
    environ = {"MODELBOOSTER_RECONCILER_GREETER_GREETING": "hi"}
    assert _parse([], environ).of(GREETER) == GreeterSettings(greeting="hi")
    settings = _parse(["--greeter-greeting=hey", "--workers=7"], environ)
    assert settings.of(GREETER) == GreeterSettings(greeting="hey")
    assert settings.of(MODELBOOSTER).workers == 7  # the other peers' flags are all still there


def test_a_peer_given_no_settings_runs_with_its_defaults() -> None:
    assert ReconcilerSettings().of(GREETER) == GreeterSettings()
    assert FAST.replace(greeter=GreeterSettings("hi")).of(GREETER) == GreeterSettings("hi")


async def test_it_registers_beside_the_others_and_reconciles(fake: FakeApiServer) -> None:
    metrics = Metrics()
    client = KubeClient.for_configuration(fake.aio_configuration(), user_agent="greeter-test", metrics=metrics)
    process = build(FAST.replace(greeter=GreeterSettings("hi")), client, metrics, peers=(MODELBOOSTER, GREETER))
    greeter: Greeter = process.registered_by(GREETER)
    assert process.manager.controllers == [process.registered_by(MODELBOOSTER).controller, greeter.controller]
    stop = asyncio.Event()
    task = asyncio.create_task(process.manager.run(stop))
    try:
        fake.create({"apiVersion": "v1", "kind": "ConfigMap", "data": {},
                     "metadata": {"name": "ada", "namespace": NS, "labels": {GREET_LABEL: "yes"}}})  # fmt: skip
        fake.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": NS}})

        def greeting(name: str) -> Any:
            return ((fake.get("v1", "configmaps", name, NS) or {}).get("data") or {}).get("greeting")

        await eventually(lambda: greeting("ada") == "hi, ada", message="the greeter reconciled")
        assert greeting("other") is None  # not labelled: not the greeter's
        labels = {"controller": "greeter", "result": "success"}
        await eventually(lambda: metrics.registry.get_sample_value("controller_runtime_reconcile_total", labels))
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await client.close()
