"""Every option we put on an engine's command line exists in the release we name, checked against a table of that
release's options read from its own source (tests/unit/engines/*_flags.txt, with how each was read)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.engines.engine import Engine
from shared.engines.registry import ENGINES
from shared.engines.sglang.serving import SGLANG
from shared.engines.vllm.serving import VLLM
from tests.unit.engines.support import argv_options, render, sglang_doc, worker
from tests.unit.engines.tables import flag_table
from tests.unit.synthesis.support import load_input, server_worker, vllm_doc

GPUS = {"limits": {"nvidia.com/gpu": "2"}}
ADAPTERS = [{"name": "sql", "artifactURL": "hf://org/sql"}]
# Real options of both engines, with a boolean of each kind: what a user's config renders is checked too.
SGLANG_CONFIG = {"context-length": 4096, "disable-radix-cache": True, "lora-strict-loading": False, "port": 30001}
VLLM_CONFIG = {"max-model-len": 4096, "enforce-eager": True, "enable-prefix-caching": False, "port": 8001}


def _commands(children: list[dict[str, Any]]) -> list[list[str]]:
    commands = []
    for obj in children:
        if obj["kind"] != "ModelServing":
            continue
        for role in obj["spec"]["template"]["roles"]:
            for template in ("entryTemplate", "workerTemplate"):
                for container in role[template]["spec"].get("containers", []):
                    if container["name"] != "runtime" and "command" in container:
                        commands.append(container["command"])
    return commands


def _sglang_renderings() -> list[list[dict[str, Any]]]:
    return [
        render(sglang_doc()),
        render(sglang_doc(loraAdapters=ADAPTERS, workers=[worker(config=SGLANG_CONFIG, resources=GPUS)])),
        render(sglang_doc(workers=[worker(pods=2, resources=GPUS, config={"enable-lora": True})])),
    ]


def _vllm_renderings() -> list[list[dict[str, Any]]]:
    return [
        render(vllm_doc()),
        render(vllm_doc(loraAdapters=ADAPTERS, workers=[server_worker(config=VLLM_CONFIG)])),
        render(vllm_doc(workers=[server_worker(pods=2, resources=GPUS)])),
        *(render(load_input(name)) for name in ("single-vllm", "pd-nixl", "two-backends-model-autoscaling")),
    ]


@pytest.mark.parametrize(("engine", "renderings"), [(SGLANG, _sglang_renderings), (VLLM, _vllm_renderings)])
def test_every_option_we_emit_exists_in_the_named_release(engine: Engine, renderings: Any) -> None:
    table = flag_table(engine.name.lower(), engine.version)
    emitted: set[str] = set()
    for children in renderings():
        for command in _commands(children):
            # vLLM's parser takes `_` for `-` in option names (FlexibleArgumentParser); SGLang's does not.
            options = argv_options(command)
            emitted.update(option.replace("_", "-") if engine is VLLM else option for option in options)
    assert emitted, "nothing rendered"
    assert sorted(emitted - table.options) == []


@pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)
def test_the_negatable_options_an_engine_module_knows_are_its_releases(engine: Engine) -> None:
    assert engine.negatable_flags == flag_table(engine.name.lower(), engine.version).negatable


def test_the_tables_are_of_whole_parsers() -> None:
    # A table that lost most of its lines would pass the checks above for the few options it kept.
    assert len(flag_table("sglang", SGLANG.version).options) > 500
    assert len(flag_table("vllm", VLLM.version).options) > 300
