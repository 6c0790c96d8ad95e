"""`modelbooster render`: examples, output formats, namespace and uid, exit codes."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import render as render_cli
from reconciler.modelbooster.synthesis import SynthesisError
from shared.constants import LABEL_MODEL_UID
from tests.unit.synthesis.support import HERE, vllm_doc

EXAMPLES = HERE.parents[2] / "examples"
# Children per example, counted by reading each file: 2 per backend, the route, and autoscaling objects.
EXAMPLE_KINDS = {
    "single-vllm-cpu.yaml": ["ModelServing", "ModelServer", "ModelRoute"],
    "pd-disaggregation-nixl.yaml": ["ModelServing", "ModelServer", "ModelRoute"],
    "single-backend-kthena-v1.yaml": ["ModelServing", "ModelServer", "ModelRoute"],
    "single-backend-kthena-v04.yaml": ["ModelServing", "ModelServer", "ModelRoute"],
    "single-backend-autoscaling-kthena-v04.yaml": [
        "ModelServing",
        "ModelServer",
        "ModelRoute",
        "AutoscalingPolicy",
        "AutoscalingPolicyBinding",
    ],
    "pd-single-backend-kthena-v04.yaml": [
        "ModelServing",
        "ModelServer",
        "ModelRoute",
        "AutoscalingPolicy",
        "AutoscalingPolicyBinding",
    ],
    "backend-autoscaling.yaml": [
        "ModelServing",
        "ModelServer",
        "ModelRoute",
        "AutoscalingPolicy",
        "AutoscalingPolicyBinding",
    ],
    "two-backends-model-autoscaling-lora.yaml": [
        "ModelServing",
        "ModelServer",
        "ModelServing",
        "ModelServer",
        "ModelRoute",
        "AutoscalingPolicy",
        "AutoscalingPolicyBinding",
    ],
}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="modelbooster render")
    render_cli.add_arguments(parser)
    code = render_cli.run(parser.parse_args(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path: Path, *documents: dict[str, Any]) -> str:
    path = tmp_path / "mb.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def _no_namespace() -> dict[str, Any]:
    doc = vllm_doc()
    del doc["metadata"]["namespace"]
    del doc["metadata"]["uid"]
    return doc


@pytest.mark.parametrize("example", sorted(EXAMPLE_KINDS))
def test_examples_render(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = EXAMPLES / example
    if not source.exists():
        pytest.skip(f"{source} is not in this checkout")
    code, out, err = _run(["-f", str(source)], capsys)
    assert code == 0, err
    children = list(yaml.safe_load_all(out))
    assert [child["kind"] for child in children] == EXAMPLE_KINDS[example]
    namespace = yaml.safe_load(source.read_text())["metadata"]["namespace"]
    assert {child["metadata"]["namespace"] for child in children} == {namespace}


def test_yaml_output_is_clean_block_style(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(["-f", _write(tmp_path, vllm_doc())], capsys)
    assert code == 0
    assert "!!" not in out  # no python or other explicit tags
    assert "&id" not in out
    assert "*id" not in out
    # Block style: the only flow collections are the empty ones YAML cannot write otherwise.
    assert not re.search(r"(: |- )(\{[^}]|\[[^\]])", out)
    assert "emptyDir: {}" in out
    assert out.startswith("apiVersion: workload.serving.volcano.sh/v1alpha1\nkind: ModelServing\nmetadata:\n")
    assert "\n---\napiVersion: networking.serving.volcano.sh/v1alpha1\nkind: ModelServer\n" in out
    # The drain script is a literal block, and the long KV-events JSON stays on one line.
    assert re.search(r"- \|\n +while true; do\n +METRICS=", out)
    kv = '\'{"enable_kv_cache_events":true,"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557"}\''
    assert f"- {kv}\n" in out


def test_json_output_is_a_list_of_the_same_children(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, vllm_doc())
    _, as_yaml, _ = _run(["-f", path], capsys)
    code, as_json, _ = _run(["-f", path, "-o", "json"], capsys)
    assert code == 0
    body = json.loads(as_json)
    assert body["apiVersion"] == "v1"
    assert body["kind"] == "List"
    assert body["items"] == list(yaml.safe_load_all(as_yaml))


def test_namespace_defaults_then_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, _no_namespace())
    _, out, _ = _run(["-f", path], capsys)
    assert {child["metadata"]["namespace"] for child in yaml.safe_load_all(out)} == {"default"}
    _, out, _ = _run(["-f", path, "--namespace", "team-a"], capsys)
    assert {child["metadata"]["namespace"] for child in yaml.safe_load_all(out)} == {"team-a"}


def test_namespace_flag_conflicting_with_the_object_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(["-f", _write(tmp_path, vllm_doc()), "-n", "other"], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert 'the namespace from the object "ns" does not match the namespace "other"' in err


def test_no_owner_reference_unless_the_uid_is_given(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # A reference to a uid no object has is garbage-collected (tests/reconciler/test_rendered_children.py).
    _, out, _ = _run(["-f", _write(tmp_path, _no_namespace())], capsys)
    child = next(yaml.safe_load_all(out))
    assert child["metadata"]["labels"][LABEL_MODEL_UID].startswith("unowned-")
    assert "ownerReferences" not in child["metadata"]
    _, out, _ = _run(["-f", _write(tmp_path, vllm_doc())], capsys)
    assert next(yaml.safe_load_all(out))["metadata"]["ownerReferences"][0]["uid"] == vllm_doc()["metadata"]["uid"]


def test_images_come_from_the_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["-f", _write(tmp_path, vllm_doc()), "--runtime-image", "rt:9", "--downloader-image", "dl:9"]
    _, out, _ = _run(argv, capsys)
    pod = next(yaml.safe_load_all(out))["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]
    assert pod["initContainers"][0]["image"] == "dl:9"
    assert pod["containers"][0]["image"] == "rt:9"


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(vllm_doc()).encode())))
    code, out, _ = _run(["-f", "-"], capsys)
    assert code == 0
    assert [c["kind"] for c in yaml.safe_load_all(out)] == ["ModelServing", "ModelServer", "ModelRoute"]


def test_invalid_object_exits_1_with_the_webhooks_message(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = vllm_doc(minReplicas=1, maxReplicas=2)
    code, out, err = _run(["-f", _write(tmp_path, doc)], capsys)
    assert code == 1
    assert out == ""
    assert err.startswith('ModelBooster "m":\nvalidation failed:\n  - spec.backends[0]')
    assert "minReplicas and maxReplicas must be equal when no autoscaling is set" in err


def test_one_invalid_document_prints_no_children_at_all(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = vllm_doc(type="MindIE")
    bad["metadata"]["name"] = "bad"
    code, out, err = _run(["-f", _write(tmp_path, vllm_doc(), bad)], capsys)
    assert code == 1
    assert out == ""
    assert err.startswith('document 2 (ModelBooster "bad"):\nvalidation failed:\n')


def test_defaulting_warnings_go_to_stderr(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = vllm_doc(workers=[{"type": "server", "image": "vllm:1", "replicas": 1, "pods": 0}])
    code, out, err = _run(["-f", _write(tmp_path, doc)], capsys)
    assert code == 0
    assert err.startswith("Warning: ")
    assert "pods" in err
    assert next(yaml.safe_load_all(out))["spec"]["template"]["roles"][0]["workerReplicas"] == 0


def test_synthesis_failure_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: object, **__: object) -> list[dict[str, Any]]:
        raise SynthesisError("server worker not found in backend: b")

    monkeypatch.setattr(render_cli, "synthesize", refuse)
    code, out, err = _run(["-f", _write(tmp_path, vllm_doc())], capsys)
    assert (code, out) == (1, "")
    assert err == "modelbooster render: server worker not found in backend: b\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("", "no documents"),
        ("a: [", "not valid YAML"),
        ("apiVersion: v1\nkind: ModelBooster\n", 'apiVersion is "v1", expected workload.serving.volcano.sh/v1alpha1'),
        ("- 1\n", "is a list"),
    ],
)
def test_unusable_files_exit_2_with_one_line(
    content: str | None, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "in.yaml"
    if content is not None:
        path.write_text(content)
    code, out, err = _run(["-f", str(path)], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("modelbooster render: ")
    assert message in err


def test_dispatched_by_the_modelbooster_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from modelbooster.cli import main

    assert main(["render", "-f", _write(tmp_path, vllm_doc()), "-o", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["items"]) == 3


def _kinds_and_specs(out: str) -> list[tuple[str, dict[str, Any]]]:
    return [(d["kind"], d["spec"]) for d in yaml.safe_load_all(out)]


def test_the_generation_option_picks_kthenas_autoscaling_shape(capsys: pytest.CaptureFixture[str]) -> None:
    """Expected shapes from the facts of each generation (docs/design/kthena-generations.md)."""
    example = str(EXAMPLES / "backend-autoscaling.yaml")
    code, default_out, _ = _run(["-f", example], capsys)
    assert code == 0
    code, v01_out, err = _run(["-f", example, "--generation", "v0.1"], capsys)
    assert (code, err) == (0, render_cli.UNOWNED_NOTE + "\n")
    assert v01_out == default_out  # the default is the shape of the CRDs we ship
    v01 = dict(_kinds_and_specs(v01_out))
    scaling = v01["AutoscalingPolicyBinding"]["scalingConfiguration"]

    code, v02_out, err = _run(["-f", example, "--generation", "v0.2"], capsys)
    assert code == 0
    v02 = dict(_kinds_and_specs(v02_out))
    target = scaling["target"]
    assert v02["AutoscalingPolicyBinding"] == {
        "policyRef": v01["AutoscalingPolicyBinding"]["policyRef"],
        "homogeneousTarget": {
            "target": {
                "targetRef": target["targetRef"],
                "metricEndpoint": {
                    **target["metricEndpoint"],
                    "labelSelector": {"matchLabels": target["additionalMatchLabels"]},
                },
            },
            "minReplicas": scaling["minReplicas"],
            "maxReplicas": scaling["maxReplicas"],
        },
    }
    assert v02["AutoscalingPolicy"] == v01["AutoscalingPolicy"]
    assert "topologySpreadConstraints" not in v02["ModelServing"]
    assert err == (
        "Warning: spec.topologySpreadConstraints of ModelServing is not in the CRD of Kthena v0.2.0 to v0.4.0; "
        "left out (the API server would drop it)\n" + render_cli.UNOWNED_NOTE + "\n"
    )

    code, v10_out, _ = _run(["-f", example, "--generation", "v1.0"], capsys)
    assert code == 0
    v10 = _kinds_and_specs(v10_out)
    assert [kind for kind, _ in v10] == ["ModelServing", "ModelServer", "ModelRoute", "AutoscalingPolicy"]
    policy = v10[-1][1]
    old_policy = v01["AutoscalingPolicy"]
    assert policy["metrics"] == [
        {"name": m["metricName"], "targetValue": m["targetValue"]} for m in old_policy["metrics"]
    ]
    homogeneous = policy["homogeneousTarget"]
    assert (homogeneous["minReplicas"], homogeneous["maxReplicas"]) == (scaling["minReplicas"], scaling["maxReplicas"])
    assert homogeneous["target"]["targetRef"] == target["targetRef"]
    assert homogeneous["target"]["metricSources"] == {
        m["metricName"]: {
            "pod": {
                "name": m["metricName"],
                **target["metricEndpoint"],
                "labelSelector": {"matchLabels": target["additionalMatchLabels"]},
            }
        }
        for m in old_policy["metrics"]
    }


def test_an_unknown_generation_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _run(["-f", str(EXAMPLES / "backend-autoscaling.yaml"), "--generation", "v0.5"], capsys)
    assert exited.value.code == 2
    assert "invalid choice: 'v0.5'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("release", "generation"),
    [("v0.3", "v0.2"), ("v0.4", "v0.2"), ("0.4.0", "v0.2"), ("v0.1.0", "v0.1"), ("v1", "v1.0"), ("1.0", "v1.0"),
     ("V1.0.0", "v1.0")],
)
def test_a_release_as_users_write_it_names_its_generation(
    release: str, generation: str, capsys: pytest.CaptureFixture[str]
) -> None:
    example = str(EXAMPLES / "backend-autoscaling.yaml")
    assert _run(["-f", example, "--generation", release], capsys)[:2] == _run(
        ["-f", example, "--generation", generation], capsys
    )[:2]


@pytest.mark.parametrize(
    ("example", "generation", "shape"),
    [
        ("backend-autoscaling.yaml", "v0.1", "Kthena v0.1.0 (and the child CRDs this chart ships)"),
        ("single-backend-autoscaling-kthena-v04.yaml", "v0.2", "Kthena v0.2.0 to v0.4.0"),
        ("single-backend-kthena-v1.yaml", "v1.0", "Kthena v1.0.0"),
    ],
)
def test_without_generation_the_inputs_shape_picks_it_and_says_so(
    example: str, generation: str, shape: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(EXAMPLES / example)
    code, out, err = _run(["-f", source], capsys)
    assert code == 0
    assert out == _run(["-f", source, "--generation", generation], capsys)[1]
    assert f"modelbooster render: children for the child CRDs of {shape} (--generation {generation})" in err


