"""Worker config -> vLLM arguments (docs/design/synthesis.md §9, Q18 fixed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.api.modelbooster import ModelBooster
from shared.engines.engine import config_args as engine_args
from tests.unit.synthesis.support import render, server_worker, vllm_doc


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1000000, ["1000000"]),  # Go printed 1e+06 (Q18)
        (1048576, ["1048576"]),  # Go printed 1.048576e+06
        (32768, ["32768"]),
        (0, ["0"]),
        (-1, ["-1"]),
        (0.9, ["0.9"]),
        (0.00001, ["1e-05"]),
        (2.0, ["2"]),  # an int option written as a float still parses
        (1.5e300, ["1.5e+300"]),
        (True, []),  # a bare flag (issue 38: `--enforce-eager true` left vLLM a stray positional argument)
        ("bfloat16", ["bfloat16"]),
        ("", []),  # bare flag
        (None, []),  # YAML `key:` with nothing after it: bare flag
        ({"image": 2, "video": 0}, ['{"image":2,"video":0}']),
        (["a", 1, 0.5], ["a", "1", "0.5"]),
        ([], []),
    ],
)
def test_value_rendering(value: Any, expected: list[str]) -> None:
    assert engine_args({"opt": value}) == ["--opt", *expected]


def test_false_turns_an_option_off() -> None:
    # Off by its `--no-` form where the engine has one (vLLM's BooleanOptionalAction options, whose default may
    # be on), else by leaving it out: a store_true option is off unless given.
    negatable = frozenset({"--enable-prefix-caching"})
    config = {"enable-prefix-caching": False, "enforce_eager": False, "trust-remote-code": True}
    assert engine_args(config, negatable=negatable) == ["--no-enable-prefix-caching", "--trust-remote-code"]


def test_keys_are_sorted_by_bytes_and_underscores_become_dashes() -> None:
    config = {"tensor_parallel_size": 2, "block-size": 128, "Zed": "z", "a_b_c": "x"}
    assert engine_args(config) == [
        "--Zed",
        "z",
        "--a-b-c",
        "x",
        "--block-size",
        "128",
        "--tensor-parallel-size",
        "2",
    ]


def test_no_config_gives_no_arguments() -> None:
    assert engine_args(None) == []
    assert engine_args({}) == []


def test_head_facts_example() -> None:
    config = {
        "block-size": 128,
        "gpu-memory-utilization": 0.9,
        "max-model-len": 32768,
        "served-model-name": "deepseek-v3",
        "tensor-parallel-size": 2,
        "trust-remote-code": "",
    }
    expected = (
        "--block-size 128 --gpu-memory-utilization 0.9 --max-model-len 32768 "
        "--served-model-name deepseek-v3 --tensor-parallel-size 2 --trust-remote-code"
    )
    assert engine_args(config) == expected.split()


def test_numbers_from_json_admission_requests_render_as_written() -> None:
    # The webhook and the reconciler see the object as JSON; integers must survive the trip as integers.
    doc = json.loads(json.dumps(vllm_doc(workers=[server_worker(config={"max-num-batched-tokens": 1000000})])))
    booster = ModelBooster.model_validate_json(json.dumps(doc))
    engine = render(booster.model_dump(mode="json", by_alias=True, exclude_none=True))[0]
    command = engine["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][1]["command"]
    assert command[5:7] == ["--max-num-batched-tokens", "1000000"]
