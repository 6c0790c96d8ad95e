"""`modelbooster validate`: exit codes, outputs and the one-line errors for bad files."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import validate as validate_cli
from tests.unit.factories import backend, modelbooster, worker

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
EMPTY = "is empty (no documents, or only comments), expected YAML or JSON objects"
BINARY = "is binary data, expected YAML or JSON objects as UTF-8 text"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="modelbooster validate")
    validate_cli.add_arguments(parser)
    code = validate_cli.run(parser.parse_args(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, *documents: Any, name: str = "mb.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    return str(path)


def test_valid_file_exits_0_with_a_summary_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(EXAMPLES / "single-vllm-cpu.yaml"))
    assert (code, out, err) == (0, 'ModelBooster "qwen-small": valid\n', "")


def test_output_yaml_prints_the_defaulted_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = write(tmp_path, modelbooster(backend(workers=[{"image": "vllm"}]), name="m"))
    code, out, err = run(capsys, "-f", source, "-o", "yaml")
    assert (code, err) == (0, "")
    printed = yaml.safe_load(out)
    assert printed["spec"]["backends"][0]["routeWeight"] == 100
    assert printed["spec"]["backends"][0]["workers"] == [{"image": "vllm", "type": "server", "replicas": 1, "pods": 1}]


def test_output_json_prints_one_object_or_a_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = write(tmp_path, modelbooster(name="one"))
    code, out, _ = run(capsys, "-f", source, "-o", "json")
    assert code == 0
    assert json.loads(out)["metadata"]["name"] == "one"
    source = write(tmp_path, modelbooster(name="one"), modelbooster(name="two"))
    code, out, _ = run(capsys, "-f", source, "-o", "json")
    listing = json.loads(out)
    assert (code, listing["kind"], [item["metadata"]["name"] for item in listing["items"]]) == (
        0,
        "List",
        ["one", "two"],
    )


def test_invalid_object_exits_1_with_the_webhook_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(EXAMPLES / "invalid" / "rate-limit.yaml"))
    assert (code, out) == (1, "")
    assert err == (
        'ModelBooster "rate-limit":\n'  # named, even alone: a pipeline's log shows which one failed
        "validation failed:\n"
        "  - spec.rateLimit: Forbidden: rate limiting of the generated ModelRoute is not supported; "
        "manage a ModelRoute yourself\n"
    )


def test_multi_document_input_reports_each_document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = write(
        tmp_path,
        modelbooster(name="good"),
        modelbooster(backend(type="MindIE"), name="bad"),
        modelbooster(backend(workers=[worker(pods=0)]), name="zero-pods"),
    )
    code, out, err = run(capsys, "-f", source, "-o", "yaml")
    assert code == 1
    printed = list(yaml.safe_load_all(out))
    assert [document["kind"] for document in printed] == ["ModelBooster", "Status", "ModelBooster"]
    assert [printed[0]["metadata"]["name"], printed[1]["details"]["name"], printed[2]["metadata"]["name"]] == [
        "good",
        "bad",
        "zero-pods",
    ]
    assert err == (
        'document 2 (ModelBooster "bad"):\n'
        "validation failed:\n"
        '  - spec.backends[0].type: Invalid value: "MindIE": not supported yet; '
        'supported: vLLM, vLLMDisaggregated, SGLang\n'
        'Warning: document 3 (ModelBooster "zero-pods"): spec.backends[0].workers[0].pods: 0 is not a valid pod '
        "count (every replica has at least its entry pod); set to 1\n"
    )


def test_stdin_is_read_with_a_dash(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(yaml.safe_dump(modelbooster(name="piped")).encode())))
    code, out, _ = run(capsys, "-f", "-")
    assert (code, out) == (0, 'ModelBooster "piped": valid\n')


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", f"<FILE>: {EMPTY}"),
        ("---\n# only a comment\n---\n", f"<FILE>: {EMPTY}"),
        ("spec: [unclosed\n", "<FILE>: not valid YAML: "),
        ("- a\n- b\n", "<FILE>: document 1 is a list, expected an object with apiVersion and kind"),
        ("just text\n", "<FILE>: document 1 is a string, expected an object with apiVersion and kind"),
        (
            "apiVersion: workload.serving.volcano.sh/v1beta1\nkind: ModelBooster\n",
            '<FILE>: document 1: apiVersion is "workload.serving.volcano.sh/v1beta1", expected '
            "workload.serving.volcano.sh/v1alpha1",
        ),
        (
            "kind: ModelBooster\n",
            "<FILE>: document 1: apiVersion is missing, expected workload.serving.volcano.sh/v1alpha1",
        ),
        ("metadata: {name: x}\n", "<FILE>: document 1: kind is missing, expected ModelBooster"),
        (
            "kind: ModelBooster\nkind: ModelBooster\n",
            "<FILE>: not valid YAML: found duplicate key 'kind' (line 2, column 1)",
        ),
    ],
)
def test_bad_files_give_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    code, out, err = run(capsys, "-f", str(path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("modelbooster validate: " + message.replace("<FILE>", str(path)))


def test_other_kinds_are_skipped_and_counted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # `kustomize build | modelbooster validate -f -`: a stream with Services and ConfigMaps beside the models.
    other = [{"apiVersion": "v1", "kind": "Service"}, {"apiVersion": "v1", "kind": "ConfigMap"}]
    source = write(tmp_path, other[0], modelbooster(name="m"), other[1], other[0])
    code, out, err = run(capsys, "-f", source)
    assert (code, out) == (0, 'ModelBooster "m": valid\n')
    assert err == (
        "modelbooster validate: skipped 3 documents of other kinds (1 ConfigMap, 2 Service); "
        "--other-kinds=error refuses them\n"
    )


def test_other_kinds_error_refuses_the_document_and_still_judges_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write(tmp_path, modelbooster(backend(type="MindIE")), {"apiVersion": "v1", "kind": "Service"})
    code, out, err = run(capsys, "-f", source, "--other-kinds", "error")
    assert (code, out) == (2, "")
    assert err.startswith(
        f'modelbooster validate: {source}: document 2: kind is "Service", expected ModelBooster or an Inferno kind\n'
        'document 1 (ModelBooster "m"):\nvalidation failed:\n  - spec.backends[0].type: '
    )


def test_missing_file_and_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "-f", str(tmp_path / "nope.yaml"))
    assert (code, err) == (2, f"modelbooster validate: {tmp_path / 'nope.yaml'}: no such file\n")
    code, _, err = run(capsys, "-f", str(tmp_path))
    assert (code, err) == (
        2,
        f"modelbooster validate: {tmp_path}: is a directory with no *.yaml/*.yml/*.json files in it "
        "(-R reads subdirectories too)\n",
    )


def test_binary_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\xff\xfe\x00binary")
    code, _, err = run(capsys, "-f", str(path))
    assert (code, err) == (2, f"modelbooster validate: {path}: {BINARY}\n")


def test_old_file_runs_the_update_checks(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old = write(tmp_path, modelbooster(backend(workers=[worker(replicas=1)]), name="m"), name="old.yaml")
    new = write(tmp_path, modelbooster(backend(workers=[worker(replicas=3)]), name="m"), name="new.yaml")
    code, _, err = run(capsys, "-f", new, "--old", old)
    assert code == 1
    assert "spec.backends[0].workers[0].replicas: Forbidden: cannot change from 1 to 3" in err


def test_old_file_carries_unchanged_fields_over_with_a_warning_and_its_own_exit_code(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Admission lets such an update through, but the reconciler leaves the object Failed: not exit 0, which a CI
    gate reads as "safe to apply", and not "valid"."""
    stored = modelbooster(backend(workers=[worker(networkTopology={"mode": "hard"})]), name="m")
    old = write(tmp_path, stored, name="old.yaml")
    edited = {**stored, "spec": {**stored["spec"], "modelMatch": {"headers": {"x": {"exact": "y"}}}}}
    code, out, err = run(capsys, "-f", write(tmp_path, edited, name="new.yaml"), "--old", old)
    assert code == validate_cli.EXIT_NOT_RECONCILED == 3
    assert out == (
        'ModelBooster "m": admitted, but not reconciled: it keeps 1 field unchanged from the stored object that '
        "fails validation, so the reconciler marks it Failed and leaves its children as they are until it is "
        "removed or fixed\n"
    )
    assert err == (
        "Warning: unchanged, so admitted: spec.backends[0].workers[0].networkTopology: Forbidden: topology "
        "configuration of ModelServing is not supported; create the ModelServing yourself\n"
        "Warning: fields carried over unchanged are not refused; the reconciler leaves this ModelBooster Failed, "
        "and its children untouched, until they are removed or fixed\n"
    )
    code, _, err = run(capsys, "-f", write(tmp_path, edited, name="new.yaml"))
    assert code == 1  # the same object as a CREATE
    assert "networkTopology: Forbidden" in err


def test_a_rejection_outweighs_an_object_left_unreconciled(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stored = modelbooster(backend(workers=[worker(networkTopology={"mode": "hard"})]), name="m")
    old = write(tmp_path, stored, name="old.yaml")
    bad = modelbooster(backend(workers=[worker(), worker()]), name="bad")
    code, out, _ = run(capsys, "-f", write(tmp_path, stored, bad, name="new.yaml"), "--old", old)
    assert code == 1
    assert out.startswith('ModelBooster "m": admitted, but not reconciled: it keeps 1 field')
    code, _, _ = run(capsys, "-f", write(tmp_path, stored, modelbooster(name="ok"), name="new.yaml"), "--old", old)
    assert code == 3


def test_the_exit_codes_are_documented_in_help() -> None:
    from modelbooster import cli

    parser = cli.build_parser(only="validate")
    [subparsers] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    text = " ".join(subparsers.choices["validate"].format_help().split())
    assert "3 none is rejected, but the reconciler will not act on one" in text
    assert "0 every object is valid, and the reconciler acts on each" in text


def test_old_object_applies_to_the_document_of_its_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Stored objects always have a namespace; a file written for `kubectl apply -n NS` often has none.
    stored = modelbooster(backend(workers=[worker(replicas=1)]), name="m")
    old = write(tmp_path, stored, name="old.yaml")
    unplaced = modelbooster(backend(workers=[worker(replicas=3)]), name="m")
    del unplaced["metadata"]["namespace"]
    other = modelbooster(backend(workers=[worker(replicas=3)]), name="other")  # a CREATE: no UPDATE rules
    code, out, err = run(capsys, "-f", write(tmp_path, other, unplaced, name="new.yaml"), "--old", old)
    assert code == 1
    assert out == 'ModelBooster "other": valid\n'
    assert err.startswith('document 2 (ModelBooster "m"):\nvalidation failed:\n')


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ([modelbooster(name="m"), modelbooster(name="n")], "holds 2 objects, expected exactly one (the stored "),
        ([{"apiVersion": "v1", "kind": "List", "items": []}], "is empty"),
        ([modelbooster(name="other")], 'the stored object is ModelBooster "other", which is not among the objects '),
        ([{**modelbooster(name="m"), "metadata": {"name": "m", "namespace": "prod"}}], "which is not among the "),
    ],
    ids=["two-objects", "empty-list", "other-name", "other-namespace"],
)
def test_old_file_must_be_exactly_the_stored_object(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stored: list[dict[str, Any]], expected: str
) -> None:
    new = write(tmp_path, modelbooster(name="m"), name="new.yaml")
    old = write(tmp_path, *stored, name="old.yaml")
    code, out, err = run(capsys, "-f", new, "--old", old)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"modelbooster validate: {old}: ")
    assert expected in err


def test_a_v04_object_scaled_from_zero_is_valid_with_a_warning_and_one_scaled_twice_is_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The two admission rules of Kthena v0.4.0's autoscaling, offline as the webhook says them."""
    v04: dict[str, Any] = {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "zero"},
        "spec": {
            "autoscalingPolicy": {"metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 8}]},
            "backend": {"name": "cpu", "type": "vLLM", "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
                        "minReplicas": 0, "maxReplicas": 3, "workers": [{"image": "vllm"}]},
        },
    }  # fmt: skip
    code, out, err = run(capsys, "-f", write(tmp_path, v04))
    assert (code, out) == (0, 'ModelBooster "zero": valid\n')
    assert err.startswith("Warning: spec.backend.minReplicas: 0 with spec.autoscalingPolicy:")
    assert "nothing scales it up from zero" in err
    assert "kubectl scale modelservings.workload.serving.volcano.sh zero-cpu --replicas=1" in err

    v04["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "true"}
    code, out, err = run(capsys, "-f", write(tmp_path, v04))
    assert (code, out) == (1, "")
    assert "metadata.annotations[modelbooster.io/external-replicas]: Forbidden: \"true\" may not be set beside an " \
        "autoscaling policy" in err  # fmt: skip
    assert "remove the annotation modelbooster.io/external-replicas" in err
    assert "or remove the autoscaling policy (spec.autoscalingPolicy, or each backend's own)" in err
