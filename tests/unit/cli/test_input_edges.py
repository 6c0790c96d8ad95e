"""What a new user trips over with `-f` (issue 38): a misspelt kind of our groups, one unusable input among good
ones, `-n` on validate, `kubectl get -o yaml` output with status, an object given twice, a URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import render as render_cli
from modelbooster import validate as validate_cli
from tests.unit.cli.test_inputs import BAD, GOOD, run, write
from tests.unit.factories import backend, modelbooster

COMMANDS = [validate_cli, render_cli]


def prog(module: Any) -> str:
    return f"modelbooster {module.__name__.rsplit('.', 1)[1]}"


def refused(capsys: pytest.CaptureFixture[str], module: Any, *argv: str) -> str:
    """What stderr says of an input that cannot be used (exit 2, nothing on stdout)."""
    code, out, err = run(capsys, module, *argv)
    assert (code, out) == (2, "")
    return err


def unowned(module: Any) -> str:
    """What render says of children rendered without the owner's uid (tests/reconciler/test_rendered_children.py)."""
    return render_cli.UNOWNED_NOTE + "\n" if module is render_cli else ""


def chosen(module: Any) -> list[str]:
    """Arguments that keep render from saying which generation it picked (a line these tests do not check)."""
    return ["--generation", "v0.1"] if module is render_cli else []


@pytest.mark.parametrize("module", COMMANDS)
@pytest.mark.parametrize(
    ("kind", "meant"),
    [("ModelBoster", "ModelBooster"), ("Modelbooster", "ModelBooster"), ("ModelServng", "ModelServing")],
)
def test_a_misspelt_kind_of_our_group_is_an_error_with_a_did_you_mean(
    module: Any, kind: str, meant: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write(tmp_path / "m.yaml", {**modelbooster(name="m"), "kind": kind})
    assert refused(capsys, module, "-f", source) == (
        f'{prog(module)}: {source}: document 1: kind "{kind}" is not served by '
        f'workload.serving.volcano.sh/v1alpha1; did you mean "{meant}"?\n'
    )


def test_a_misspelt_inferno_kind_is_an_error_and_an_unknown_one_lists_the_kinds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write(
        tmp_path / "i.yaml",
        {"apiVersion": "inferno.platform.ai/v1alpha1", "kind": "Acelerator", "metadata": {"name": "a"}},
        {"apiVersion": "inferno.platform.ai/v1alpha1", "kind": "Widget", "metadata": {"name": "w"}},
    )
    assert refused(capsys, validate_cli, "-f", source) == (
        f'modelbooster validate: {source}: document 1: kind "Acelerator" is not served by '
        'inferno.platform.ai/v1alpha1; did you mean "Accelerator"?\n'
        f'modelbooster validate: {source}: document 2: kind "Widget" is not served by inferno.platform.ai/v1alpha1; '
        "its kinds are Accelerator, Model, ServiceClass, Server, Capacity, Optimizer\n"
    )


def test_validate_judges_every_input_when_one_is_unusable_and_exits_with_the_worst(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good, bad = write(tmp_path / "good.yaml", GOOD), write(tmp_path / "bad.yaml", BAD)
    tab = tmp_path / "tab.yaml"
    tab.write_text("apiVersion: v1\n\tkind: ModelBooster\n", encoding="utf-8")
    code, out, err = run(capsys, validate_cli, "-f", good, "-f", str(tab), "-f", bad)
    assert code == 2
    assert out == 'ModelBooster "good": valid\n'
    lines = err.splitlines()
    assert lines[0].startswith(f"modelbooster validate: {tab}: not valid YAML")
    assert f'{bad}: document 1 (ModelBooster "bad"):' in lines
    assert "  - spec.backends[0].type: " in err
    # Without the unusable input, the rejection is the worst verdict.
    assert run(capsys, validate_cli, "-f", good, "-f", bad)[0] == 1


def test_render_judges_every_input_and_prints_no_child_when_one_is_unusable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good, bad = write(tmp_path / "good.yaml", GOOD), write(tmp_path / "bad.yaml", BAD)
    missing = str(tmp_path / "missing.yaml")
    err = refused(capsys, render_cli, "-f", good, "-f", missing, "-f", bad)
    assert f"modelbooster render: {missing}: no such file\n" in err
    assert f'{bad}: document 1 (ModelBooster "bad"):\nvalidation failed:\n' in err


@pytest.mark.parametrize("module", COMMANDS)
def test_a_single_rejected_object_is_named(module: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, module, "-f", write(tmp_path / "bad.yaml", BAD))
    assert code == 1
    assert err.startswith('ModelBooster "bad":\nvalidation failed:\n')


def test_validate_takes_a_namespace_as_kubectl_does(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = write(tmp_path / "m.yaml", {**GOOD, "metadata": {"name": "good"}})
    code, out, _ = run(capsys, validate_cli, "-f", source, "-n", "team-a", "-o", "yaml")
    assert (code, yaml.safe_load(out)["metadata"]["namespace"]) == (0, "team-a")
    other = write(tmp_path / "other.yaml", {**GOOD, "metadata": {"name": "good", "namespace": "team-b"}})
    assert refused(capsys, validate_cli, "-f", other, "--namespace", "team-a") == (
        f'modelbooster validate: {other}: document 1: the namespace from the object "team-b" does not match the '
        'namespace "team-a" given with --namespace\n'
    )


def kubectl_get_list(*items: dict[str, Any]) -> dict[str, Any]:
    # What `kubectl get modelboosters -A -o yaml` prints: server-set metadata and a status on each item.
    stored = []
    for number, item in enumerate(items):
        metadata = {**item["metadata"], "namespace": "team-a", "uid": f"0000000{number}-1111-2222-3333-444444444444",
                    "resourceVersion": "42", "generation": 1, "creationTimestamp": "2026-11-28T10:00:00Z"}  # fmt: skip
        status = {"conditions": [{"type": "Active", "status": "True"}], "observedGeneration": 1}
        stored.append({**item, "metadata": metadata, "status": status})
    return {"apiVersion": "v1", "kind": "List", "items": stored, "metadata": {"resourceVersion": ""}}


@pytest.mark.parametrize("module", COMMANDS)
def test_status_of_a_kubectl_get_list_is_ignored_and_said_once(
    module: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = write(tmp_path / "all.yaml", kubectl_get_list(GOOD, modelbooster(name="other")))
    code, out, err = run(capsys, module, "-f", source, "-o", "name", *chosen(module))
    assert code == 0
    assert out
    assert err == (
        f"{prog(module)}: ignored the status of 2 objects (controllers write it; the API server ignores it on "
        "create)\n"  # the items have their uid: the children are owned
    )


@pytest.mark.parametrize("module", COMMANDS)
def test_the_same_object_twice_is_one_object(module: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = write(tmp_path / "m.yaml", GOOD)
    once = run(capsys, module, "-f", source, "-o", "name")
    code, out, err = run(capsys, module, "-f", source, "-f", source, "-o", "name", *chosen(module))
    assert (code, out) == (0, once[1])
    assert err == f"{prog(module)}: 1 document repeats an earlier one exactly; each object is judged once\n" + unowned(
        module
    )


@pytest.mark.parametrize("module", COMMANDS)
def test_the_same_object_twice_with_other_content_is_refused(
    module: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    changed = modelbooster(backend(minReplicas=2, maxReplicas=2), name="good")
    source = write(tmp_path / "m.yaml", GOOD, changed)
    code, out, err = run(capsys, module, "-f", source, "-o", "name")
    assert code == 2
    assert out == ("modelbooster.workload.serving.volcano.sh/good\n" if module is validate_cli else "")
    assert err == (
        f'{prog(module)}: {source}: document 2: ModelBooster "good" again, with other content than {source}: '
        "document 1; an object can be given once (kubectl apply would keep only the last)\n"
    )


def test_objects_without_a_name_are_each_refused_as_the_api_server_would_not_taken_for_copies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    nameless = [{**modelbooster(name="x"), "metadata": {}}, {**modelbooster(backend("b"), name="x"), "metadata": {}}]
    code, out, err = run(capsys, validate_cli, "-f", write(tmp_path / "m.yaml", *nameless))
    assert (code, out) == (1, "")
    assert err.count("metadata.name: Required value: name or generateName is required") == 2
    # A generateName is enough for the API server (`kubectl create`), and the webhook judges the rest.
    named_later = {**modelbooster(name="x"), "metadata": {"generateName": "x-"}}
    code, out, err = run(capsys, validate_cli, "-f", write(tmp_path / "g.yaml", named_later))
    assert (code, out, err) == (0, "ModelBooster (no name): valid\n", "")


@pytest.mark.parametrize("module", COMMANDS)
def test_a_url_is_said_to_be_unsupported(module: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = "https://example.com/model.yaml"
    assert refused(capsys, module, "-f", url) == (
        f"{prog(module)}: {url}: is a URL, and only files, directories and - (stdin) are read; fetch it first: "
        f"curl -fsSL '{url}' | ... -f -\n"
    )

