"""The flag tables in docs/ are generated from the parsers (scripts/flag_tables.py) and equal `--help`."""

from __future__ import annotations

import argparse
import re
from types import ModuleType

import pytest

from modelbooster import cli
from tests.chart.scripts import load_script


@pytest.fixture(scope="module")
def flag_tables() -> ModuleType:
    return load_script("flag_tables")


def test_the_tables_in_the_docs_are_up_to_date(flag_tables: ModuleType) -> None:
    assert flag_tables.main(["--check"]) == 0, "run `python scripts/flag_tables.py --write`"


def _help_options(command: str) -> set[str]:
    parser = cli.build_parser(only=command)
    [subparsers] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    text = subparsers.choices[command].format_help()
    options: set[str] = set()
    for line in text.splitlines():
        if line.startswith("  -"):  # an option's own line, not a mention in another's help
            options.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line.split("  ", 2)[1]))
    return options - {"-h", "--help"}


def _table_options(flag_tables: ModuleType, command: str) -> set[str]:
    document = flag_tables.DOCUMENTS[command].read_text(encoding="utf-8")
    block = document.split(flag_tables.begin_marker(command), 1)[1].split(flag_tables.END, 1)[0]
    options: set[str] = set()
    for row in block.splitlines()[2:]:
        options.update(re.findall(r"`(--?[A-Za-z][\w-]*)`", row.split("|")[1]))
    return options


@pytest.mark.parametrize("command", ["reconciler", "webhook", "optimizer"])
def test_each_table_lists_exactly_the_flags_help_shows(flag_tables: ModuleType, command: str) -> None:
    assert _table_options(flag_tables, command) == _help_options(command)


def _shown_help(command: str) -> dict[str, str]:
    """Each option's help as `COMMAND --help` prints it (without the line wrapping)."""
    parser = cli.build_parser(only=command)
    [subparsers] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    subparser = subparsers.choices[command]
    formatter = subparser._get_formatter()
    return {
        action.option_strings[-1]: formatter._expand_help(action)
        for action in subparser._actions
        if action.option_strings and action.help
    }


@pytest.mark.parametrize("command", ["reconciler", "webhook", "optimizer"])
def test_help_shows_the_default_the_table_lists(flag_tables: ModuleType, command: str) -> None:
    """`--help` is where an operator looks first: every default the docs' table lists is in it too."""
    shown = _shown_help(command)
    missing = []
    for row in flag_tables.rows(flag_tables.command_parser(command)):
        if row.default == "–":
            continue
        value = row.default.strip("`")
        text = shown[row.flags[-1]]
        # A plain on/off flag may say in words what "off" means (`-F`: "default: stateless").
        worded = value == "off" and "(default: " in text
        if f"(default: {value})" not in text and not worded:
            missing.append(f"{row.flags[-1]}: {text!r} (table: {value})")
    assert not missing, "\n".join(missing)


def test_help_says_when_a_variable_set_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS", "8")
    shown = _shown_help("reconciler")
    assert "(default: 8, from MODELBOOSTER_RECONCILER_MODELBOOSTER_WORKERS)" in shown["--workers"]
    assert "(default: 15)" in shown["--lease-duration"]
