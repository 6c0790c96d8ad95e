"""The environment we give vLLM's containers holds no `VLLM_*` variable its release does not know: vLLM 0.33.0
warns of each at start, and refuses to start under `--fail-on-environ-validation`. The table,
tests/unit/engines/vllm_0_33_0_env.txt, is read from the release's vllm/envs.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.engines.test_flags_exist import _vllm_renderings

TABLE = Path(__file__).with_name("vllm_0_33_0_env.txt")


def known() -> frozenset[str]:
    return frozenset(line for line in TABLE.read_text().splitlines() if line and not line.startswith("#"))


def vllm_variables(children: list[dict[str, Any]]) -> set[str]:
    names = set()
    for obj in children:
        if obj["kind"] != "ModelServing":
            continue
        for role in obj["spec"]["template"]["roles"]:
            for template in ("entryTemplate", "workerTemplate"):
                pod = (role.get(template) or {}).get("spec") or {}
                for container in [*pod.get("containers", []), *pod.get("initContainers", [])]:
                    names.update(e["name"] for e in container.get("env", []) if e["name"].startswith("VLLM_"))
    return names


def test_the_table_is_the_releases_whole_list() -> None:
    names = known()
    assert len(names) > 250
    assert {"VLLM_HOST_IP", "VLLM_PORT", "VLLM_LOGGING_LEVEL"} <= names
    assert "VLLM_USE_V1" not in names  # removed with the V0 engine: the reason this test exists


def test_every_vllm_variable_we_render_is_one_the_release_knows() -> None:
    rendered = set().union(*(vllm_variables(children) for children in _vllm_renderings()))
    assert rendered - known() == set()
