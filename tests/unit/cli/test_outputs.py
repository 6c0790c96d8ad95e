"""What `validate` and `render` print for pipelines: structured denials, `-o name`, namespaced names."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import render as render_cli
from modelbooster import validate as validate_cli
from tests.unit.factories import backend, modelbooster

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def run(capsys: pytest.CaptureFixture[str], module: Any, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    code = module.run(parser.parse_args(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, *documents: Any) -> str:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    return str(path)


def test_validate_json_writes_a_denial_as_the_api_servers_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write(tmp_path / "m.yaml", modelbooster(backend(type="MindIE"), name="bad"))
    code, out, _ = run(capsys, validate_cli, "-f", source, "-o", "json")
    assert code == 1
    status = json.loads(out)
    assert {key: status[key] for key in ("apiVersion", "kind", "status", "reason", "code")} == {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "reason": "Invalid",
        "code": 422,
    }
    assert status["details"] == {
        "name": "bad",
        "group": "workload.serving.volcano.sh",
        "kind": "ModelBooster",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "MindIE": not supported yet; supported: vLLM, vLLMDisaggregated, SGLang',
                "field": "spec.backends[0].type",
            }
        ],
    }
    assert status["message"].startswith('ModelBooster "bad": validation failed:\n  - spec.backends[0].type: ')


@pytest.mark.parametrize("output", [None, "yaml", "json", "name"])
def test_render_never_prints_a_status_into_the_apply_pipeline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, output: str | None
) -> None:
    """`render -o yaml | kubectl apply -f -` must apply nothing when a ModelBooster is rejected: no child, and no
    Status (which kubectl would try to apply); the reason goes to stderr. `validate -o json` is the report."""
    source = write(tmp_path / "m.yaml", modelbooster(name="good"), modelbooster(backend(type="MindIE"), name="bad"))
    code, out, err = run(capsys, render_cli, "-f", source, *(("-o", output) if output else ()))
    assert (code, out) == (1, "")
    assert 'document 2 (ModelBooster "bad"):\nvalidation failed:\n  - spec.backends[0].type: ' in err
    code, out, _ = run(capsys, validate_cli, "-f", source, "-o", "json")
    assert [(item["kind"], item["metadata"].get("name")) for item in json.loads(out)["items"]] == [
        ("ModelBooster", "good"),
        ("Status", None),
    ]


def test_o_name_prints_kind_group_and_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, validate_cli, "-f", str(EXAMPLES / "single-vllm-cpu.yaml"), "-o", "name")
    assert (code, out) == (0, "modelbooster.workload.serving.volcano.sh/qwen-small\n")
    code, out, _ = run(capsys, render_cli, "-f", str(EXAMPLES / "single-vllm-cpu.yaml"), "-o", "name")
    assert (code, out.split()) == (
        0,
        [
            "modelserving.workload.serving.volcano.sh/qwen-small-cpu",
            "modelserver.networking.serving.volcano.sh/qwen-small-cpu",
            "modelroute.networking.serving.volcano.sh/qwen-small",
        ],
    )


def test_objects_listed_from_all_namespaces_are_named_with_their_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # What `kubectl get modelboosters -A -o yaml` prints: one List, the same name in two namespaces.
    items = []
    for namespace in ("team-a", "team-b"):
        item = (
            modelbooster(name="llama") if namespace == "team-a" else modelbooster(backend(type="MindIE"), name="llama")
        )
        item["metadata"] = {"name": "llama", "namespace": namespace, "uid": f"uid-{namespace}", "resourceVersion": "7"}
        items.append(item)
    listing = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    source = write(tmp_path / "all.yaml", listing)
    code, out, err = run(capsys, validate_cli, "-f", source)
    assert (code, out) == (1, 'ModelBooster "team-a/llama": valid\n')
    assert err.startswith('document 1, item 2 (ModelBooster "team-b/llama"):\nvalidation failed:\n')
    code, out, err = run(capsys, render_cli, "-f", source)
    assert code == 1
    assert err.startswith('document 1, item 2 (ModelBooster "team-b/llama"):\nvalidation failed:\n')
