"""The `modelbooster` dispatcher: one console script, each subcommand's module loaded only when used."""

from __future__ import annotations

import argparse

import pytest

from modelbooster import cli


class _Recorder:
    def __init__(self) -> None:
        self.loaded: list[str] = []

    def __call__(self, module: str) -> object:
        self.loaded.append(module)

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
    assert recorder.loaded == ["webhook.main"]
    assert parser.parse_args(["webhook", "--flag", "x"]).flag == "x"


def test_help_lists_every_command_without_importing_them_all_for_a_subcommand() -> None:
    recorder = _Recorder()
    cli.build_parser(recorder)  # type: ignore[arg-type]
    assert recorder.loaded == [module for module, _ in cli.COMMANDS.values()]


def test_main_runs_the_chosen_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", "-f", "examples/single-vllm-cpu.yaml"]) == 0


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["frobnicate"])
    assert exited.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
