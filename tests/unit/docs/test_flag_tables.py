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
