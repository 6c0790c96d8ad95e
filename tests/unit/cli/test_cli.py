"""The `modelbooster` dispatcher: one console script, each subcommand's module loaded only when used."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from modelbooster import cli


class _Recorder:
    def __init__(self) -> None:
        self.loaded: list[str] = []

    def __call__(self, name: str) -> object:
        self.loaded.append(name)

        class _Command:
            @staticmethod
            def add_arguments(parser: argparse.ArgumentParser) -> None:
                parser.add_argument("--flag")

            @staticmethod
            def run(args: argparse.Namespace) -> int:
                return 0

        return _Command()


def test_only_the_chosen_command_is_imported() -> None:
    recorder = _Recorder()
    parser = cli.build_parser(recorder, only="webhook")  # type: ignore[arg-type]
    assert recorder.loaded == ["webhook"]
    assert parser.parse_args(["webhook", "--flag", "x"]).flag == "x"


def test_help_lists_every_command_without_importing_them_all_for_a_subcommand() -> None:
    recorder = _Recorder()
    cli.build_parser(recorder)  # type: ignore[arg-type]
    assert recorder.loaded == list(cli.COMMANDS)


@pytest.mark.parametrize(
    ("command", "must_not_import"),
    [
        ("render", {"aiohttp", "webhook", "reconciler.runtime", "optimizer"}),
        ("validate", {"aiohttp", "reconciler", "optimizer"}),
        ("webhook", {"reconciler", "optimizer", "scipy", "kubernetes.client.api"}),
    ],
)
def test_a_real_subcommand_imports_only_its_own_part(command: str, must_not_import: set[str]) -> None:
    # In a fresh interpreter: the test process has imported everything already.
    script = (
        "import sys; from modelbooster import cli; cli.build_parser(only=sys.argv[1]);"
        "print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", script, command], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    offending = {name for name in loaded if any(name == f or name.startswith(f + ".") for f in must_not_import)}
    assert offending == set()


def test_main_runs_the_chosen_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", "-f", "examples/single-vllm-cpu.yaml"]) == 0


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["frobnicate"])
    assert exited.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
