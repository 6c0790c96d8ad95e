"""`modelbooster validate` of Inferno objects: the checks the reconciler's Inferno controller applies."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import validate as validate_cli

INFERNO = Path(__file__).resolve().parents[3] / "examples" / "inferno"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    validate_cli.add_arguments(parser)
    code = validate_cli.run(parser.parse_args(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def documents(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((INFERNO / name).read_text()))


def test_the_inferno_examples_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(INFERNO))
    assert (code, err) == (0, "")
    assert 'Server "premium-granite-13b": valid\n' in out
    assert out.count(": valid\n") == sum(len(documents(path.name)) for path in INFERNO.glob("*.yaml"))


def test_a_field_error_names_the_object_and_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    [accelerator, *_] = documents("accelerators.yaml")
    accelerator["spec"]["cost"] = "cheap"
    path = tmp_path / "acc.yaml"
    path.write_text(yaml.safe_dump(accelerator))
    code, _, err = run(capsys, "-f", str(path))
    assert code == 1
    assert err.startswith('Accelerator "a100":\nvalidation failed:\n  - spec.cost: ')


def test_a_server_whose_model_is_missing_is_refused_as_the_controller_refuses_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Everything of the example but the Model: the Servers refer to a model nobody defined.
    sources = [str(INFERNO / name) for name in ("accelerators.yaml", "serviceclasses.yaml", "servers.yaml")]
    code, out, err = run(capsys, *(arg for source in sources for arg in ("-f", source)), "-o", "json")
    assert code == 1
    assert "spec.model: unknown model 'granite-13b' (none defined)" in err
    statuses = [item for item in json.loads(out)["items"] if item["kind"] == "Status"]
    assert {status["details"]["name"] for status in statuses} == {"premium-granite-13b", "free-granite-13b"}
    assert statuses[0]["details"]["causes"][0]["field"] == "spec.model"
