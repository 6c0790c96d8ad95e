"""When each engine takes LoRA adapters at run time (docs/design/reconciler.md §10)."""

from __future__ import annotations

import pytest
from kubernetes.client import V1EnvVar

from shared.engines.sglang.serving import SGLANG
from shared.engines.vllm.serving import VLLM


@pytest.mark.parametrize(
    ("value", "enabled"),
    [("true", True), ("True", True), (" TRUE ", True), ("1", True), ("0", False), ("yes", False), ("", False)],
)
def test_vllm_reads_its_switch_as_vllm_0_33_0_does(value: str, enabled: bool) -> None:
    env = [V1EnvVar(name="VLLM_ALLOW_RUNTIME_LORA_UPDATING", value=value)]
    assert VLLM.runtime_lora_enabled(env, None) is enabled


def test_vllm_without_the_switch_and_sglang_by_its_config() -> None:
    assert VLLM.runtime_lora_enabled(None, {"enable-lora": True}) is False
    assert SGLANG.runtime_lora_enabled(None, {"enable_lora": True}) is True
    assert SGLANG.runtime_lora_enabled(None, {"enable-lora": ""}) is True  # a bare flag
    assert SGLANG.runtime_lora_enabled(None, {"enable-lora": False}) is False
    assert SGLANG.runtime_lora_enabled(None, None) is False
