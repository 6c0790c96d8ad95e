"""docs/design/validation.md §4 (3), (5) and §6: worker images and types, the prefill/decode pair, engine configs.

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.factories import backend, modelbooster, pd_workers, worker
from tests.unit.validation.support import lines


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("   ", 'Invalid value: "   ": invalid container image reference: image cannot be empty or whitespace only'),
        (
            "\t\u3000",
            'Invalid value: "\\t\u3000": invalid container image reference: image cannot be empty or whitespace only',
        ),
        (
            "vllm/vllm openai",
            'Invalid value: "vllm/vllm openai": invalid container image reference: image cannot contain spaces',
        ),
        # Beyond the plain space: any Go whitespace, as the newer line checks.
        (
            "vllm/vllm\topenai",
            'Invalid value: "vllm/vllm\\topenai": invalid container image reference: image cannot contain whitespace',
        ),
    ],
)
def test_bad_images_are_rejected(image: str, expected: str) -> None:
    obj = modelbooster(backend(workers=[worker(image=image)]))
    assert lines(obj) == [f"spec.backends[0].workers[0].image: {expected}"]


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.10.1", "", "registry:5000/a/b@sha256:abc", "a\x1cb"])
def test_good_or_empty_images_pass(image: str) -> None:
    # U+001C is whitespace to Python's str.isspace but not to Go: it must not be rejected as whitespace.
    assert lines(modelbooster(backend(workers=[worker(image=image)]))) == []


# --- (5) worker types ---------------------------------------------------------------------------------------


def test_vllm_needs_exactly_one_worker() -> None:
    obj = modelbooster(backend(workers=[worker(), worker()]))
    assert lines(obj) == [
        "spec.backends[0].workers: Invalid value: 2: If backend type is 'vLLM', there must be exactly one worker"
    ]


def test_vllm_worker_must_be_a_server() -> None:
    obj = modelbooster(backend(workers=[worker(type="decode")]))
    assert lines(obj) == [
        "spec.backends[0].workers[0].type: Invalid value: \"decode\": If backend type is 'vLLM', the worker type "
        "must be 'server'"
    ]


def test_a_worker_without_type_is_a_server() -> None:
    assert lines(modelbooster(backend(workers=[{"image": "vllm/vllm-openai"}]))) == []


def test_disaggregated_workers_must_be_prefill_or_decode() -> None:
    obj = modelbooster(backend(type="vLLMDisaggregated", workers=[*pd_workers(), worker(type="server")]))
    assert lines(obj) == [
        "spec.backends[0].workers[2].type: Invalid value: \"server\": If backend type is 'vLLMDisaggregated', all "
        "workers must be type 'prefill' or 'decode'",
    ]


def test_vllm_with_prefill_and_decode_workers_gets_the_reference_error_and_the_type_to_use() -> None:
    obj = modelbooster(backend(type="vLLM", workers=pd_workers()))
    assert lines(obj) == [
        "spec.backends[0].workers: Invalid value: 2: If backend type is 'vLLM', there must be exactly one worker; "
        "for prefill and decode workers use type: vLLMDisaggregated",
    ]
    # Two servers are not a disaggregated backend: the reference's words alone.
    assert lines(modelbooster(backend(type="vLLM", workers=[worker(), worker()]))) == [
        "spec.backends[0].workers: Invalid value: 2: If backend type is 'vLLM', there must be exactly one worker",
    ]


def test_sglang_with_two_workers_gets_the_reference_error_and_ours() -> None:
    obj = modelbooster(backend(type="SGLang", workers=[worker(), worker()]))
    assert lines(obj) == [
        "spec.backends[0].workers: Invalid value: 2: If backend type is 'SGLang', there must be exactly one worker",
    ]


def test_mindie_disaggregated_rejects_server_workers() -> None:
    obj = modelbooster(backend(type="MindIEDisaggregated", workers=[worker(type="controller"), worker()]))
    assert lines(obj) == [
        "spec.backends[0].workers[1].type: Invalid value: \"server\": If backend type is 'MindIEDisaggregated', all "
        "workers must be type 'prefill', 'decode', 'controller', or 'coordinator' (not 'server')",
        'spec.backends[0].type: Invalid value: "MindIEDisaggregated": not supported yet; supported: vLLM, '
        "vLLMDisaggregated, SGLang",
    ]


@pytest.mark.parametrize(
    ("workers", "count", "prefill", "decode"),
    [
        ([worker(type="prefill")], 1, 1, 0),
        ([worker(type="decode")], 1, 0, 1),
        ([worker(type="prefill"), worker(type="prefill"), worker(type="decode")], 3, 2, 1),
    ],
)
def test_disaggregated_backend_needs_exactly_one_prefill_and_one_decode(
    workers: list[dict[str, Any]], count: int, prefill: int, decode: int
) -> None:
    assert lines(modelbooster(backend(type="vLLMDisaggregated", workers=workers))) == [
        f"spec.backends[0].workers: Invalid value: {count}: a vLLMDisaggregated backend needs exactly one prefill "
        f"and one decode worker; found {prefill} prefill and {decode} decode"
    ]


@pytest.mark.parametrize(
    ("config", "shown"), [(["--max-model-len", "8"], '["--max-model-len","8"]'), ("x", '"x"'), (3, "3")]
)
def test_config_must_be_an_object(config: object, shown: str) -> None:
    assert lines(modelbooster(backend(workers=[worker(config=config)]))) == [
        f"spec.backends[0].workers[0].config: Invalid value: {shown}: must be a JSON object of engine arguments"
    ]


def test_a_worker_without_config_is_fine() -> None:
    assert lines(modelbooster(backend(workers=[worker(config=None)]))) == []
