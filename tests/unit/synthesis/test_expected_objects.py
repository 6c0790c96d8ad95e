"""Synthesized children against hand-written expected objects (tests/unit/synthesis/expected/)."""

from __future__ import annotations

import json

from tests.unit.synthesis.support import load_expected, load_input, masked, render


def test_single_vllm_backend_matches_expected_objects_and_key_order() -> None:
    children = masked(render(load_input("single-vllm")))
    expected = load_expected("single-vllm")
    assert children == expected
    # The YAML that `render` prints keeps insertion order, so the order is part of the contract.
    assert json.dumps(children) == json.dumps(expected)


def test_pd_backend_with_kv_connector_matches_expected_objects() -> None:
    children = masked(render(load_input("pd-nixl")))
    assert children == load_expected("pd-nixl")


def test_two_backends_with_model_level_autoscaling_and_lora() -> None:
    children = masked(render(load_input("two-backends-model-autoscaling")))
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("ModelServing", "llama-gpu"),
        ("ModelServer", "llama-gpu"),
        ("ModelServing", "llama-cpu"),
        ("ModelServer", "llama-cpu"),
        ("ModelRoute", "llama"),
        ("AutoscalingPolicy", "llama"),
        ("AutoscalingPolicyBinding", "llama"),
    ]
    assert children[4:] == load_expected("two-backends-model-autoscaling")


def test_backend_level_autoscaling_pairs_follow_each_backend() -> None:
    children = masked(render(load_input("backend-autoscaling")))
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("ModelServing", "mistral-fast"),
        ("ModelServer", "mistral-fast"),
        ("ModelServing", "mistral-split"),
        ("ModelServer", "mistral-split"),
        ("ModelServing", "mistral-fixed"),
        ("ModelServer", "mistral-fixed"),
        ("ModelRoute", "mistral"),
        ("AutoscalingPolicy", "mistral-fast"),
        ("AutoscalingPolicyBinding", "mistral-fast"),
        ("AutoscalingPolicy", "mistral-split"),
        ("AutoscalingPolicyBinding", "mistral-split"),
    ]
    assert children[7:] == load_expected("backend-autoscaling")


def test_lora_backends_download_and_load_their_adapters() -> None:
    children = render(load_input("two-backends-model-autoscaling"))
    pod = children[0]["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]
    init = pod["initContainers"]
    assert [c["name"] for c in init] == ["llama-model-downloader", "llama-lora-downloader-0", "llama-lora-downloader-1"]
    assert init[0]["args"] == [
        "--source",
        "s3://models/llama",
        "--output-dir",
        "/cache/390ff8eb42166b8dde9c56fb4a6869cf",
    ]
    assert init[0]["env"] == [{"name": "ENDPOINT", "value": "https://s3.example.internal"}]
    assert init[1]["args"] == [
        "--source",
        "hf://acme/sql-lora",
        "--output-dir",
        "/cache/ddc68bd9f3b7be31c4c3816ab7a84663",
    ]
    assert init[2]["args"] == [
        "--source",
        "hf://acme/chat-lora",
        "--output-dir",
        "/cache/e5ec2c9bef1847d349a2a16ea4f7c0b2",
    ]
    # LoRA downloaders get the backend's whole env (the model downloader only the endpoint variables).
    assert init[1]["env"] == [{"name": "ENDPOINT", "value": "https://s3.example.internal"}]
    engine = pod["containers"][1]
    assert engine["command"] == [
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/cache/390ff8eb42166b8dde9c56fb4a6869cf",
        "--kv-events-config",
        '{"enable_kv_cache_events":true,"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557"}',
        "--enable-lora",
        "--lora-modules",
        "sql=/cache/ddc68bd9f3b7be31c4c3816ab7a84663",
        "chat=/cache/e5ec2c9bef1847d349a2a16ea4f7c0b2",
    ]
    # The empty cacheURI gives an emptyDir mounted at /cache (Q11).
    assert pod["volumes"][0] == {"name": "gpu-weights", "emptyDir": {}}
    assert engine["volumeMounts"][0] == {"name": "gpu-weights", "mountPath": "/cache"}
