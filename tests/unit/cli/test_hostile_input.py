"""`modelbooster validate` and `render` on hostile input: exit 2 with one line, never a traceback or a hang.

The real console entry point runs in a subprocess for the inputs of the report (an alias bomb, deep nesting,
binary data); hypothesis then drives both commands in-process with random bytes and YAML-ish text.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelbooster import render, validate
from modelbooster.yaml_loader import LOADERS, YAMLInputError, load_stream

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEADER = "apiVersion: workload.serving.volcano.sh/v1alpha1\nkind: ModelBooster\nmetadata: {name: m}\n"
EXAMPLE = (Path(__file__).resolve().parents[3] / "examples" / "two-backends-model-autoscaling-lora.yaml").read_text()
# Pieces of YAML syntax, a few values the API rules care about, and bytes that are not text.
TOKENS = [
    *"[]{},:-?|>!&*#'\"%@`\n\t ",
    "- ",
    "? ",
    ": ",
    "---\n",
    "...\n",
    "&a ",
    "*a",
    "<<: ",
    "!!int ",
    "!!float ",
    "!!bool ",
    "!!binary ",
    "!!timestamp ",
    "!!set ",
    "!!python/object:os.system ",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "spec: ",
    "backends: ",
    "workers: ",
    "name: ",
    "replicas: ",
    "1",
    "-1",
    "1e309",
    ".inf",
    ".nan",
    "0x7f",
    "1:2:3",
    "~",
    "null",
    "true",
    "x" * 70,
    "\ufeff",
    "\u2028",
    "\x85",
    "é",
    "\x00",
    "\x07",
]
yamlish = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)
inputs = st.one_of(
    st.binary(max_size=400),
    yamlish.map(str.encode),
    yamlish.map(lambda text: (HEADER + text).encode()),
    st.tuples(st.integers(0, len(EXAMPLE)), yamlish).map(lambda cut: (EXAMPLE[: cut[0]] + cut[1]).encode()),
)


def bomb(levels: int) -> str:
    """Nine times nine times ... `x`: 9**levels values in a few hundred bytes."""
    lines = ["a: &a [x,x,x,x,x,x,x,x,x]"]
    names = "abcdefghijklmnopqrstuvwxyz"[: levels + 1]
    lines += [f"{now}: &{now} [{','.join([f'*{before}'] * 9)}]" for before, now in itertools.pairwise(names)]
    return "\n".join(lines) + "\n"


def run_in_process(module: ModuleType, path: Path) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = module.run(parser.parse_args(["-f", str(path)]))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("bomb.yaml", bomb(11).encode(), "document 1: more than 11,"),
        ("deep.yaml", b"[" * 5_000, "document 1: nested more than 100 levels deep (line 1, column 100)"),
        ("deep.json", b'{"a":' * 5_000, "document 1: nested more than 100 levels deep (line 1, column 496)"),
        ("weights.bin", bytes(range(256)) * 4, "is binary data, expected YAML or JSON objects as UTF-8 text"),
    ],
    ids=["alias-bomb", "deep-flow", "deep-json", "binary"],
)
@pytest.mark.parametrize("command", ["validate", "render"])
def test_the_console_command_exits_2_with_one_line(
    tmp_path: Path, command: str, name: str, content: bytes, problem: str
) -> None:
    assert name != "bomb.yaml" or len(content) <= 460  # the size of the bomb in the report
    path = tmp_path / name
    path.write_bytes(content)
    for source, stdin in ((str(path), None), ("-", content)):
        done = subprocess.run(
            [sys.executable, "-m", "modelbooster", command, "-f", source],
            input=stdin,
            capture_output=True,
            timeout=60,
            check=False,
        )
        shown = "<stdin>" if source == "-" else str(path)
        assert (done.returncode, done.stdout) == (2, b"")
        assert done.stderr.decode().startswith(f"modelbooster {command}: {shown}: {problem}")
        assert done.stderr.count(b"\n") == 1


@FUZZ
@given(data=inputs)
def test_no_input_makes_validate_or_render_fail_internally(scratch: Path, data: bytes) -> None:
    path = scratch / "input.yaml"
    path.write_bytes(data)
    for module in (validate, render):
        code, out, err = run_in_process(module, path)
        assert code in (0, 1, 2)
        if code == 2:
            # One line per unusable document (every document is judged), each naming the file.
            assert out == ""
            prog = f"modelbooster {module.__name__.rsplit('.', 1)[-1]}: "
            unusable = [line for line in err.splitlines() if line.startswith(f"{prog}{path}")]
            assert unusable, err


@FUZZ
@given(text=st.one_of(st.text(max_size=200), yamlish))
def test_no_text_makes_either_parser_fail_otherwise_than_with_a_yaml_input_error(text: str) -> None:
    for loader in LOADERS:
        with contextlib.suppress(YAMLInputError):
            load_stream(text, loader=loader)


def test_the_fuzz_reaches_every_exit_code(scratch: Path) -> None:
    # The strategies are worth something only if they reach validation, not just the parser.
    path = scratch / "sample.yaml"
    reached = set()
    for cut, tokens in itertools.product((len(EXAMPLE), 200), ("", "spec: {backends: []}\n", "[")):
        path.write_text(EXAMPLE[:cut] + tokens if cut == len(EXAMPLE) else HEADER + tokens)
        reached.add(run_in_process(validate, path)[0])
    assert reached == {0, 1, 2}
