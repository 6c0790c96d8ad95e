"""The engine command: single-node, multi-node (Q13), which worker's config (Q14)."""

from __future__ import annotations

import shlex
from typing import Any

from tests.unit.synthesis.support import entry_pod, render, server_worker, vllm_doc

KV = '{"enable_kv_cache_events":true,"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557"}'
MODEL_DIR = "/cache/7d13ed142997ab6b7db5a77ec8c9e194"  # "/cache" + md5 of "hf://org/model"


def _serving(**backend: Any) -> dict[str, Any]:
    return render(vllm_doc(**backend))[0]


def _engine_command(serving: dict[str, Any]) -> list[str]:
    command: list[str] = entry_pod(serving)["containers"][1]["command"]
    return command


def test_multi_node_puts_every_argument_inside_the_script_each_quoted() -> None:
    worker = server_worker(
        pods=3,
        resources={"limits": {"nvidia.com/gpu": 2}},
        config={"served-model-name": "my model", "tensor-parallel-size": 2, "chat-template": "{{ x }}'s"},
    )
    serving = _serving(workers=[worker], loraAdapters=[{"name": "sql", "artifactURL": "hf://acme/sql-lora"}])
    command = _engine_command(serving)
    assert command[:2] == ["bash", "-c"]
    assert len(command) == 3  # nothing after the script: bash would take it as $0, $1...
    script = command[2]
    leader = (
        "chmod u+x examples/online_serving/multi-node-serving.sh && "
        "examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=3 --num-gpus=2 && "
    )
    assert script.startswith(leader)
    vllm = script[len(leader) :]
    assert vllm == (
        "python3 -m vllm.entrypoints.openai.api_server --model /cache/7d13ed142997ab6b7db5a77ec8c9e194"
        " --chat-template '{{ x }}'\"'\"'s' --served-model-name 'my model' --tensor-parallel-size 2"
        " --distributed_executor_backend ray"
        " --kv-events-config "
        "'" + KV + "'"
        " --enable-lora --lora-modules sql=/cache/ddc68bd9f3b7be31c4c3816ab7a84663"
    )
    # The shell gives vLLM exactly the arguments a single-node engine would get, plus Ray's.
    assert shlex.split(vllm)[5:11] == [
        "--chat-template",
        "{{ x }}'s",
        "--served-model-name",
        "my model",
        "--tensor-parallel-size",
        "2",
    ]
    assert serving["spec"]["template"]["roles"][0]["workerReplicas"] == 2


def test_single_node_command_is_a_plain_argument_list() -> None:
    command = _engine_command(_serving(workers=[server_worker(config={"dtype": "half"})]))
    assert command == [
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        MODEL_DIR,
        "--dtype",
        "half",
        "--kv-events-config",
        KV,
    ]


def test_device_count_reads_limits_then_requests_and_rounds_up() -> None:
    worker = server_worker(
        pods=2,
        resources={
            "limits": {"nvidia.com/gpu": "1"},
            "requests": {"nvidia.com/gpu": "4", "huawei.com/ascend-1980": "1500m"},
        },
    )
    script = _engine_command(_serving(workers=[worker]))[2]
    assert "--ray_cluster_size=2 --num-gpus=3 && " in script


def test_device_count_is_zero_without_accelerators() -> None:
    script = _engine_command(_serving(workers=[server_worker(pods=2)]))[2]
    assert "--ray_cluster_size=2 --num-gpus=0 && " in script


def test_command_comes_from_the_server_worker_not_the_first_worker() -> None:
    # Q14: the reference used workers[0].config.
    workers = [
        {"type": "controller", "config": {"from": "controller"}},
        server_worker(config={"from": "server"}),
    ]
    command = _engine_command(_serving(workers=workers))
    assert command[5:7] == ["--from", "server"]


def test_worker_pods_run_the_ray_worker_script() -> None:
    serving = _serving(workers=[server_worker(pods=2, image="vllm:2")])
    role = serving["spec"]["template"]["roles"][0]
    container = role["workerTemplate"]["spec"]["containers"][0]
    assert container["name"] == "b-vllm-worker"
    assert container["image"] == "vllm:2"
    assert container["command"] == [
        "bash",
        "-c",
        "chmod u+x examples/online_serving/multi-node-serving.sh && "
        "examples/online_serving/multi-node-serving.sh worker --ray_address=$(ENTRY_ADDRESS)",
    ]
