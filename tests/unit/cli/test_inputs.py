"""`-f` as kubectl reads it: repeatable, directories (`-R`), bounded; other kinds skipped and counted."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import render as render_cli
from modelbooster import validate as validate_cli
from modelbooster.manifests import ManifestError, load_manifests
from modelbooster.sources import SourceError, SourceLimits, expand_sources
from tests.unit.factories import backend, modelbooster

GOOD = modelbooster(name="good")
BAD = modelbooster(backend(type="MindIE"), name="bad")


def run(capsys: pytest.CaptureFixture[str], module: Any, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog=f"modelbooster {module.__name__.rsplit('.', 1)[1]}")
    module.add_arguments(parser)
    code = module.run(parser.parse_args(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, *documents: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("module", [validate_cli, render_cli])
def test_every_f_is_read_an_invalid_one_first_fails_the_run(
    module: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad, good = write(tmp_path / "bad.yaml", BAD), write(tmp_path / "good.yaml", GOOD)
    for order in ((bad, good), (good, bad)):
        code, _, err = run(capsys, module, "-f", order[0], "-f", order[1])
        assert code == 1, order
        assert f'{bad}: document 1 (ModelBooster "bad"):\nvalidation failed:\n' in err


def test_a_directory_reads_its_manifests_in_name_order_and_r_its_subdirectories(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write(tmp_path / "b.yml", modelbooster(name="b"))
    (tmp_path / "a.json").write_text(json.dumps(modelbooster(name="a")))
    (tmp_path / "README.md").write_text("# not a manifest\n")
    (tmp_path / "kustomization.txt").write_text("resources: []\n")
    write(tmp_path / "nested" / "c.yaml", modelbooster(name="c"))
    code, out, _ = run(capsys, validate_cli, "-f", str(tmp_path), "-o", "name")
    assert (code, out.split()) == (
        0,
        ["modelbooster.workload.serving.volcano.sh/a", "modelbooster.workload.serving.volcano.sh/b"],
    )
    code, out, _ = run(capsys, validate_cli, "-f", str(tmp_path), "-R")
    assert (code, out) == (0, 'ModelBooster "a": valid\nModelBooster "b": valid\nModelBooster "c": valid\n')


def test_a_directory_without_manifests_says_so(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "m.yaml", GOOD)
    with pytest.raises(SourceError, match=r"is a directory with no \*\.yaml/\*\.yml/\*\.json files in it \(-R"):
        expand_sources([str(tmp_path)])
    assert expand_sources([str(tmp_path)], recursive=True) == [str(tmp_path / "sub" / "m.yaml")]


def test_the_file_count_and_the_total_bytes_are_bounded(tmp_path: Path) -> None:
    for index in range(4):
        write(tmp_path / f"m{index}.yaml", modelbooster(name=f"m{index}"))
    with pytest.raises(SourceError, match="-f names more than 3 files, the most read in one run"):
        expand_sources([str(tmp_path)], limits=SourceLimits(max_files=3))
    size = (tmp_path / "m0.yaml").stat().st_size
    with pytest.raises(ManifestError, match=r"m2\.yaml: the inputs together are larger than"):
        load_manifests([str(tmp_path)], source_limits=SourceLimits(max_total_bytes=size * 2 + size // 2))


def test_stdin_is_read_once(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="stdin can be read only once"):
        expand_sources(["-", "-"])


def test_render_skips_other_kinds_and_counts_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stream = write(
        tmp_path / "all.yaml", {"apiVersion": "v1", "kind": "Namespace"}, GOOD, {"apiVersion": "v1", "kind": "Service"}
    )
    code, out, err = run(capsys, render_cli, "-f", stream, "-o", "name", "--generation", "v0.1")
    assert code == 0
    assert out.split()[-1] == "modelroute.networking.serving.volcano.sh/good"
    assert err == (
        "modelbooster render: skipped 2 documents of other kinds (1 Namespace, 1 Service); "
        "--other-kinds=error refuses them\n" + render_cli.UNOWNED_NOTE + "\n"
    )
    code, out, err = run(capsys, render_cli, "-f", stream, "--other-kinds=error")
    assert (code, out) == (2, "")
    assert err == (
        f'modelbooster render: {stream}: document 1: kind is "Namespace", expected ModelBooster\n'
        f'modelbooster render: {stream}: document 3: kind is "Service", expected ModelBooster\n'
    )
