"""The examples against both gates a user meets: the CRD (JSON schema + CEL rules) and the webhook rules."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from modelbooster.manifests import check_modelbooster_identity, load_documents
from shared.defaults import apply_defaults
from shared.validation import validate_modelbooster
from tests.unit.crd_support import cel_denials, openapi_schema, undeclared_fields

# No type stubs for jsonschema are installed (and pyproject's mypy overrides do not list it).
jsonschema: Any = importlib.import_module("jsonschema")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VALID = sorted(EXAMPLES.glob("*.yaml"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.yaml"))

RATE = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
TOPO = "topology configuration of ModelServing is not supported; create the ModelServing yourself"

# Written by hand from docs/design/api.md §3 and docs/design/validation.md §6: the webhook's lines for each
# rejected example, and whether the CRD's CEL rules reject it too (the four unsupported features) or only the
# webhook can (the rest).
EXPECTED_REJECTIONS: dict[str, tuple[list[str], bool]] = {
    "rate-limit.yaml": ([f"spec.rateLimit: Forbidden: {RATE}"], True),
    "backend-rate-limit.yaml": ([f"spec.backends[0].rateLimit: Forbidden: {RATE}"], True),
    "network-topology.yaml": ([f"spec.backends[0].networkTopology: Forbidden: {TOPO}"], True),
    "topology.yaml": ([f"spec.backends[0].topology: Forbidden: {TOPO}"], True),
    "worker-network-topology.yaml": ([f"spec.backends[0].workers[0].networkTopology: Forbidden: {TOPO}"], True),
    "panic-policy.yaml": (
        [
            "spec.autoscalingPolicy.behavior.scaleUp.panicPolicy: Forbidden: panicPolicy is not supported; "
            "create AutoscalingPolicy + Binding yourself",
            "spec.autoscalingPolicy.behavior: Forbidden: behavior is not supported; "
            "create AutoscalingPolicy + Binding yourself",
        ],
        True,
    ),
    "behavior.yaml": (
        [
            "spec.backends[0].autoscalingPolicy.behavior: Forbidden: behavior is not supported; "
            "create AutoscalingPolicy + Binding yourself"
        ],
        True,
    ),
    "mindie-backend.yaml": (
        ['spec.backends[0].type: Invalid value: "MindIE": not supported yet; '
            'supported: vLLM, vLLMDisaggregated, SGLang'],
        False,
    ),
    "pd-without-decode.yaml": (
        [
            "spec.backends[0].workers: Invalid value: 1: a vLLMDisaggregated backend needs exactly one prefill and "
            "one decode worker; found 1 prefill and 0 decode"
        ],
        False,
    ),
    "both-backend-shapes.yaml": (
        [
            "spec.backends: Forbidden: may not be set together with spec.backend: keep spec.backend for one backend, "
            "or spec.backends for a list of backends, and remove the other"
        ],
        True,
    ),
    "single-backend-autoscaling.yaml": (
        [
            "spec.autoscalingPolicy: Forbidden: a spec.backend with replicas (Kthena v1.0) has no autoscaling: it "
            "runs spec.backend.replicas replicas; to autoscale it, replace replicas with minReplicas and maxReplicas "
            "(as Kthena v0.2-v0.4 write it)"
        ],
        True,
    ),
    "backend-replicas-and-range.yaml": (
        [
            "spec.backend.replicas: Forbidden: may not be set together with minReplicas or maxReplicas: replicas is "
            "Kthena v1.0's fixed count, minReplicas and maxReplicas are Kthena v0.2-v0.4's range; keep one"
        ],
        True,
    ),
    "kv-connector-mismatch.yaml": (
        [
            'spec.backends[0].workers: Invalid value: "gpu": invalid kv connector configuration: backend gpu: '
            'kv_connector mismatch between prefill ("NixlConnector") and decode ("MooncakeConnectorV1") workers; '
            "prefill and decode must use the same kv connector"
        ],
        False,
    ),
}


# Where the CRD's CEL rules print another line than the webhook: a worker's field is checked on its backend
# (`workers` is an atomic list, where kube-apiserver refuses rules that compare with the old object).
CEL_LINES: dict[str, list[str]] = {
    "worker-network-topology.yaml": [f"spec.backends[0].workers: Forbidden: {TOPO}"],
}


def only_document(path: Path) -> dict[str, Any]:
    (document,) = load_documents(str(path))
    check_modelbooster_identity(document)
    return document


def schema_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft4Validator(openapi_schema("ModelBooster"))
    return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(document)]


def test_the_readme_example_and_every_kind_of_example_exist() -> None:
    names = {path.name for path in VALID}
    assert "single-vllm-cpu.yaml" in names
    assert len(VALID) >= 4
    assert sorted(path.name for path in INVALID) == sorted(EXPECTED_REJECTIONS)


@pytest.mark.parametrize("path", VALID, ids=lambda path: path.name)
def test_valid_examples_pass_the_crd_and_the_webhook(path: Path) -> None:
    document = only_document(path)
    schema = openapi_schema("ModelBooster")
    assert schema_errors(document) == []
    assert undeclared_fields(document, schema) == []
    assert cel_denials(document, schema) == []
    defaulted = apply_defaults(document)
    assert defaulted.warnings == []
    assert schema_errors(defaulted.obj) == []
    assert [error.render() for error in validate_modelbooster(defaulted.obj)] == []


def test_the_example_set_covers_the_promised_scenarios() -> None:
    docs = {path.name: only_document(path) for path in VALID}
    cpu = docs["single-vllm-cpu.yaml"]["spec"]["backends"]
    assert len(cpu) == 1
    assert cpu[0]["type"] == "vLLM"
    assert "nvidia.com/gpu" not in str(cpu)
    two = docs["two-backends-model-autoscaling-lora.yaml"]["spec"]
    assert len(two["backends"]) == 2
    assert "autoscalingPolicy" in two
    assert any(backend.get("loraAdapters") for backend in two["backends"])
    scaled = docs["backend-autoscaling.yaml"]["spec"]
    assert "autoscalingPolicy" not in scaled
    assert all("autoscalingPolicy" in backend for backend in scaled["backends"])
    pd = docs["pd-disaggregation-nixl.yaml"]["spec"]["backends"][0]
    assert pd["type"] == "vLLMDisaggregated"
    assert all("kv-transfer-config" in worker["config"] for worker in pd["workers"])
    single = docs["single-backend-kthena-v1.yaml"]["spec"]
    assert "backends" not in single
    assert {"name", "owner", "modelMatch"} <= set(single)
    assert "replicas" in single["backend"]
    # Kthena v0.2-v0.4's shape: a range, fixed or scaled by the model-level policy, PD too.
    ranged = {name: docs[name]["spec"] for name in docs if name.endswith("-kthena-v04.yaml")}
    assert all({"minReplicas", "maxReplicas"} <= set(spec["backend"]) for spec in ranged.values())
    assert not any("replicas" in spec["backend"] for spec in ranged.values())
    assert {"autoscalingPolicy" in spec for spec in ranged.values()} == {True, False}
    assert {spec["backend"]["type"] for spec in ranged.values()} == {"vLLM", "vLLMDisaggregated"}


@pytest.mark.parametrize("path", INVALID, ids=lambda path: path.name)
def test_invalid_examples_are_rejected_with_the_promised_message(path: Path) -> None:
    document = only_document(path)
    expected, by_cel = EXPECTED_REJECTIONS[path.name]
    schema = openapi_schema("ModelBooster")
    # Every field is declared, so kubectl sends it and the object reaches the CEL rules and the webhook.
    assert schema_errors(document) == []
    assert undeclared_fields(document, schema) == []
    assert [error.render() for error in validate_modelbooster(apply_defaults(document).obj)] == expected
    if by_cel:
        # With the webhook down, the API server's CEL rules print the same lines (but for CEL_LINES).
        assert sorted(cel_denials(document, schema)) == sorted(CEL_LINES.get(path.name, expected))
    else:
        assert cel_denials(document, schema) == []
