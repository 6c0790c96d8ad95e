"""SGLang backends rendered in every API shape and child generation (docs/engines.md, docs/design/synthesis.md §9)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from shared.autoscaling_generations import UNDECLARED_FIELDS, Generation
from shared.engines.sglang.serving import DIST_INIT_PORT
from shared.errors import ValidationFailed
from tests.reconciler.kthena_crds import child_crds
from tests.unit.crd_support import undeclared_fields
from tests.unit.engines.support import (
    SHAPES,
    child,
    containers,
    entry_engine,
    render,
    role,
    sglang_doc,
    worker,
)

jsonschema: Any = importlib.import_module("jsonschema")
MODEL_PATH_PREFIX = "/cache/"  # no cacheURI: the emptyDir cache


def _option(command: list[str], name: str) -> list[str]:
    """The words after each occurrence of option `name` up to the next option."""
    values: list[str] = []
    for index, word in enumerate(command):
        if word == name:
            for value in command[index + 1 :]:
                if value.startswith("--"):
                    break
                values.append(value)
    return values


def _schema(generation: Generation, kind: str) -> dict[str, Any]:
    [crd] = [crd for crd in child_crds(str(generation)) if crd["spec"]["names"]["kind"] == kind]
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize("generation", list(Generation))
@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_is_admitted_and_its_children_fit_each_generations_crds(shape: str, generation: Generation) -> None:
    children = render(sglang_doc(shape), generation)
    assert [c["kind"] for c in children][:3] == ["ModelServing", "ModelServer", "ModelRoute"]
    command = entry_engine(children)["command"]
    assert command[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", command[4]]
    assert command[4].startswith(MODEL_PATH_PREFIX)
    server = child(children, "ModelServer")["spec"]
    assert (server["inferenceEngine"], server["workloadPort"]["port"], server["model"]) == ("SGLang", 30000, "qwen")
    pruned = {".".join(path) for path in UNDECLARED_FIELDS[generation].get("ModelServing", ())}
    for kind in ("ModelServing", "ModelServer"):
        obj, schema = child(children, kind), _schema(generation, kind)
        assert [e.message for e in jsonschema.Draft4Validator(schema).iter_errors(obj)] == []
        assert [path for path in undeclared_fields(obj, schema) if path not in pruned] == []


def test_the_command_serves_the_downloaded_model_with_metrics_on_all_interfaces() -> None:
    command = entry_engine(render(sglang_doc()))["command"]
    assert _option(command, "--host") == ["0.0.0.0"]
    assert _option(command, "--port") == ["30000"]
    assert _option(command, "--served-model-name") == ["qwen"]
    assert command.count("--enable-metrics") == 1
    assert "--tp-size" not in command  # no accelerator: nothing to split


def test_config_becomes_sglang_options_and_unknown_keys_pass_through() -> None:
    config = {"context-length": 8192, "mem_fraction_static": 0.85, "some-future-option": "x", "trust-remote-code": True}
    command = entry_engine(render(sglang_doc(workers=[worker(config=config)])))["command"]
    assert _option(command, "--context-length") == ["8192"]
    assert _option(command, "--mem-fraction-static") == ["0.85"]
    assert _option(command, "--some-future-option") == ["x"]
    assert "--trust-remote-code" in command
    assert _option(command, "--trust-remote-code") == []


def test_false_leaves_a_store_true_option_out_and_negates_a_boolean_optional_one() -> None:
    config = {"disable-radix-cache": False, "lora-strict-loading": False, "enable-metrics": False}
    command = entry_engine(render(sglang_doc(workers=[worker(config=config)])))["command"]
    assert "--disable-radix-cache" not in command
    assert "--no-lora-strict-loading" in command
    assert command.count("--enable-metrics") == 1  # metrics stay on: the drain, the router and Inferno read them


def test_the_port_from_config_is_used_everywhere_the_engine_is_reached() -> None:
    children = render(sglang_doc(workers=[worker(config={"port": 31000})]))
    pod = role(children)["entryTemplate"]["spec"]
    engine, runtime = containers(pod)["engine"], containers(pod)["runtime"]
    assert _option(engine["command"], "--port") == ["31000"]
    assert engine["command"].count("--port") == 1
    assert engine["readinessProbe"]["httpGet"] == {"path": "/health", "port": 31000, "scheme": "HTTP"}
    assert "http://localhost:31000/metrics" in engine["lifecycle"]["preStop"]["exec"]["command"][2]
    assert _option(runtime["args"], "--engine-base-url") == ["http://localhost:31000"]
    assert child(children, "ModelServer")["spec"]["workloadPort"] == {"port": 31000}


def test_the_drain_reads_sglangs_own_gauges() -> None:
    script = entry_engine(render(sglang_doc()))["lifecycle"]["preStop"]["exec"]["command"][2]
    assert "sglang:num_running_reqs" in script
    assert "sglang:num_queue_reqs" in script
    assert "vllm:" not in script


def test_the_runtime_sidecar_is_told_sglang() -> None:
    runtime = containers(role(render(sglang_doc()))["entryTemplate"]["spec"])["runtime"]
    assert _option(runtime["args"], "--engine") == ["sglang"]


def test_a_served_model_name_in_config_names_the_model_once_for_the_router_the_engine_and_its_series() -> None:
    children = render(sglang_doc(workers=[worker(config={"served-model-name": "qwen-7b"})]))
    command = entry_engine(children)["command"]
    assert command.count("--served-model-name") == 1
    assert _option(command, "--served-model-name") == ["qwen-7b"]
    assert child(children, "ModelServer")["spec"]["model"] == "qwen-7b"


def test_tensor_parallel_spans_every_accelerator_unless_the_config_says_otherwise() -> None:
    gpus = {"limits": {"nvidia.com/gpu": "4"}}
    command = entry_engine(render(sglang_doc(workers=[worker(resources=gpus)])))["command"]
    assert _option(command, "--tp-size") == ["4"]
    two_pods = render(sglang_doc(workers=[worker(resources=gpus, pods=2)]))
    assert _option(entry_engine(two_pods)["command"], "--tp-size") == ["8"]
    own = render(sglang_doc(workers=[worker(resources=gpus, config={"tensor-parallel-size": 2})]))
    assert "--tp-size" not in entry_engine(own)["command"]
    assert _option(entry_engine(own)["command"], "--tensor-parallel-size") == ["2"]


def test_multi_node_serving_across_the_worker_group() -> None:
    children = render(sglang_doc(workers=[worker(pods=3, resources={"limits": {"nvidia.com/gpu": "8"}})]))
    leader = role(children)
    assert leader["workerReplicas"] == 2
    entry = entry_engine(children)["command"]
    dist = f"$(ENTRY_ADDRESS):{DIST_INIT_PORT}"
    assert entry[-6:] == ["--nnodes", "3", "--node-rank", "0", "--dist-init-addr", dist]
    worker_pod = leader["workerTemplate"]["spec"]
    [engine] = worker_pod["containers"]
    assert engine["name"] == "engine"
    assert engine["command"][-6:] == ["--nnodes", "3", "--node-rank", "$(WORKER_INDEX)", "--dist-init-addr", dist]
    # The same server on every node: the options before the rank agree.
    assert engine["command"][:-6] == entry[:-6]
    assert _option(entry, "--tp-size") == ["24"]
    assert [c["name"] for c in worker_pod["initContainers"]] == ["qwen-model-downloader"]
    # Worker pods serve no HTTP: the ModelServer (which selects the uid label) never routes to them.
    assert "workload.serving.volcano.sh/model-uid" not in leader["workerTemplate"]["metadata"]["labels"]


def test_lora_adapters_are_loaded_at_start() -> None:
    adapters = [{"name": "sql", "artifactURL": "hf://org/sql"}, {"name": "chat", "artifactURL": "hf://org/chat"}]
    command = entry_engine(render(sglang_doc(loraAdapters=adapters)))["command"]
    paths = _option(command, "--lora-paths")
    assert [path.split("=")[0] for path in paths] == ["sql", "chat"]
    assert all(path.split("=")[1].startswith(MODEL_PATH_PREFIX) for path in paths)
    assert command.count("--enable-lora") == 1
    with_switch = render(sglang_doc(loraAdapters=adapters, workers=[worker(config={"enable-lora": True})]))
    assert entry_engine(with_switch)["command"].count("--enable-lora") == 1


@pytest.mark.parametrize("shape", SHAPES)
def test_sglang_needs_exactly_one_server_worker(shape: str) -> None:
    with pytest.raises(ValidationFailed) as two:
        render(sglang_doc(shape, workers=[worker(), worker()]))
    assert "If backend type is 'SGLang', there must be exactly one worker" in str(two.value)
    with pytest.raises(ValidationFailed) as decode:
        render(sglang_doc(shape, workers=[{**worker(), "type": "decode"}]))
    assert "If backend type is 'SGLang', the worker type must be 'server'" in str(decode.value)


def test_a_bad_engine_port_is_refused_at_admission_as_for_vllm() -> None:
    with pytest.raises(ValidationFailed) as caught:
        render(sglang_doc(workers=[worker(config={"port": 70000})]))
    assert 'invalid port "70000" for worker server' in str(caught.value)
