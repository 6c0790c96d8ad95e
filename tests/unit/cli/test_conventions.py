"""The conventions of kubectl-style tools: a help that says what the tool is for and what exit codes mean,
completion generated from the parsers, one log-level spelling, and a top-level help that imports nothing."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

import pytest

from modelbooster import cli, completion
from tests.chart.scripts import load_script


def help_text(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_the_top_level_help_says_what_it_is_for_with_examples_and_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_text(capsys=capsys)
    assert "Check and render Kthena ModelBooster manifests without a cluster" in text
    assert "kustomize build . | modelbooster render -f -" in text
    assert "exit codes: 0 success; 1 an object is rejected, or the process failed; 2 unusable input" in text
    for name in cli.COMMANDS:
        assert f"\n    {name}" in text


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_command_lists_its_exit_codes(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(command, capsys=capsys)
    assert "\nexit codes:\n  0  " in text
    assert "\n  2  " in text


def test_the_top_level_help_imports_no_command() -> None:
    # A fresh interpreter: this one has imported everything already.
    script = (
        "import sys\nfrom modelbooster import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(done.stderr.split())
    heavy = {"pydantic", "yaml", "aiohttp", "webhook", "reconciler", "optimizer", "shared", "modelbooster.render"}
    assert {name for name in loaded if name.split(".")[0] in heavy or name in heavy} == set()


def test_bash_completion_is_generated_from_the_parsers() -> None:
    text = completion.script(cli.build_parser(), shell="bash")
    for name in cli.COMMANDS:
        assert f"        {name})" in text
    assert '-o|--output) COMPREPLY=($(compgen -W "yaml json name"' in text
    for option in ("--other-kinds", "--log-level", "--leader-elect", "--no-leader-elect"):
        assert option in text


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes_commands_options_and_values() -> None:
    text = completion.script(cli.build_parser(), shell="bash")
    probe = (
        text
        + 'COMP_WORDS=(modelbooster re); COMP_CWORD=1; _modelbooster; echo "${COMPREPLY[*]}"\n'
        + 'COMP_WORDS=(modelbooster validate --oth); COMP_CWORD=2; _modelbooster; echo "${COMPREPLY[*]}"\n'
        + "COMP_WORDS=(modelbooster render -o ''); COMP_CWORD=3; _modelbooster; echo \"${COMPREPLY[*]}\"\n"
        + 'COMP_WORDS=(modelbooster webhook --log-level d); COMP_CWORD=3; _modelbooster; echo "${COMPREPLY[*]}"\n'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["render reconciler", "--other-kinds", "yaml json name", "debug"]


def test_zsh_completion_loads_the_same_function_through_bashcompinit() -> None:
    text = completion.script(cli.build_parser(), shell="zsh")
    assert text.startswith("#compdef modelbooster\nautoload -U +X bashcompinit && bashcompinit\n")
    assert text.endswith(completion.script(cli.build_parser(), shell="bash"))
    if shutil.which("zsh"):
        subprocess.run(["zsh", "-n", "-c", text], check=True)


@pytest.mark.parametrize("command", ["webhook", "reconciler", "optimizer"])
@pytest.mark.parametrize("written", ["debug", "DEBUG", "Debug"])
def test_one_log_level_spelling_accepted_in_either_case(command: str, written: str) -> None:
    parser = cli.build_parser(only=command)
    args = parser.parse_args([command, "--log-level", written])
    assert args.log_level == "debug"


@pytest.mark.parametrize("command", ["webhook", "reconciler", "optimizer"])
def test_the_log_level_default_is_spelt_in_lower_case(command: str) -> None:
    parser = cli.build_parser(only=command)
    assert parser.parse_args([command]).log_level == "info"


def test_the_completion_script_printed_is_the_one_the_parsers_generate() -> None:
    """The command prints a script generated ahead of time (modelbooster/completion_script.py): it must be the one
    the parsers give now, or `python scripts/completion_script.py --write` was forgotten."""
    assert load_script("completion_script").main(["--check"]) == 0, "run `python scripts/completion_script.py --write`"


def test_completion_imports_no_command_and_no_package_metadata() -> None:
    """Sourced from `.bashrc`, `completion bash` runs in every new shell: it builds no command's parser (which
    imports the webhook, the reconciler, SciPy...) and reads no package metadata. (Its time is measured by
    hand, `time modelbooster completion bash`; tests never assert timings.)"""
    script = (
        "import sys\nfrom modelbooster import cli\ncode = cli.main(['completion', 'bash'])\n"
        "print(code, ' '.join(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    code, *loaded = done.stderr.split()
    assert code == "0"
    assert done.stdout.endswith("complete -F _modelbooster modelbooster\n")
    heavy = {"pydantic", "yaml", "aiohttp", "webhook", "reconciler", "optimizer", "shared", "prometheus_client",
             "importlib.metadata", "modelbooster.render", "modelbooster.validate"}  # fmt: skip
    assert sorted(name for name in loaded if name in heavy or name.split(".")[0] in heavy) == []


def test_version_is_printed_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    out, err = capsys.readouterr()
    assert (out.startswith("modelbooster "), err) == (True, "")


def test_completion_is_dispatched(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["completion", "bash"]) == 0
    assert capsys.readouterr().out.endswith("complete -F _modelbooster modelbooster\n")
    with pytest.raises(SystemExit):
        argparse.ArgumentParser().parse_args(["--nope"])
