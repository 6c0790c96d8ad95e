"""The engine image of a worker that names none: SGLang's from the settings (chart value `engine.sglangImage`,
ConfigMap key `model_serving_sglang_image`); vLLM's stays the worker's own, as in Kthena."""

from __future__ import annotations

from reconciler.modelbooster.settings import DynamicSettings
from reconciler.modelbooster.synthesis import DEFAULT_SGLANG_IMAGE, SynthesisSettings, synthesize
from shared.validation import parse_modelbooster
from tests.unit.engines.support import containers, entry_engine, render, role, sglang_doc
from tests.unit.synthesis.support import vllm_doc

NO_IMAGE = {"type": "server", "replicas": 1, "pods": 2}


def test_an_sglang_worker_without_an_image_runs_the_settings_image() -> None:
    children = render(sglang_doc(workers=[NO_IMAGE]))
    assert entry_engine(children)["image"] == DEFAULT_SGLANG_IMAGE == "lmsysorg/sglang:v0.5.23"
    [worker_container] = role(children)["workerTemplate"]["spec"]["containers"]
    assert worker_container["image"] == DEFAULT_SGLANG_IMAGE
    own = render(sglang_doc(workers=[{**NO_IMAGE, "image": "mirror.example/sglang:v0.5.23"}]))
    assert entry_engine(own)["image"] == "mirror.example/sglang:v0.5.23"


def test_the_settings_name_another_sglang_image_and_vllm_gets_none() -> None:
    settings = SynthesisSettings(sglang_image="mirror.example/sglang:pinned")
    sglang = synthesize(parse_modelbooster(sglang_doc(workers=[NO_IMAGE])), settings)
    assert entry_engine(sglang)["image"] == "mirror.example/sglang:pinned"
    vllm = synthesize(parse_modelbooster(vllm_doc(workers=[NO_IMAGE])), settings)
    assert "image" not in containers(role(vllm)["entryTemplate"]["spec"])["engine"]


def test_the_config_map_key_sets_it() -> None:
    dynamic = DynamicSettings(SynthesisSettings())
    assert dynamic.update({"model_serving_sglang_image": " mirror.example/sglang:cm "}) is True
    assert dynamic.current.sglang_image == "mirror.example/sglang:cm"
    assert dynamic.update(None) is True
    assert dynamic.current.sglang_image == DEFAULT_SGLANG_IMAGE
