"""The process kit's renamed flags (process/flags.py `prefixed`): the new name under the owner's, the old
spelling kept for the flag and for its variable."""

from __future__ import annotations

import argparse

import pytest

from process.flags import Flag, add_flags, positive_int, prefixed

PREFIX = "TEST_"
FLAGS = prefixed("box", {
    "--size": Flag("size", positive_int, 1, "how many"),
    "--box-colour": Flag("colour", str, "red", "which colour"),
})  # fmt: skip


def parse(argv: list[str], environ: dict[str, str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser, FLAGS, prefix=PREFIX, parser=parser, environ=environ or {})
    return parser.parse_args(argv)


def test_a_flag_is_renamed_under_the_owner_and_keeps_its_old_spelling() -> None:
    assert list(FLAGS) == ["--box-size", "--box-colour"]
    assert FLAGS["--box-size"].aliases == ("--size",)
    assert FLAGS["--box-colour"].aliases == ()  # already the owner's: nothing to keep


@pytest.mark.parametrize("argv", [["--box-size=3"], ["--size=3"], ["--box-size", "1", "--size", "3"]])
def test_either_spelling_sets_it_and_the_last_one_given_wins(argv: list[str]) -> None:
    assert parse(argv).size == 3


@pytest.mark.parametrize("variable", ["TEST_BOX_SIZE", "TEST_SIZE"])
def test_either_variable_sets_its_default(variable: str) -> None:
    assert parse([], {variable: "4"}).size == 4
    assert parse(["--size=2"], {variable: "4"}).size == 2


def test_two_variables_agreeing_are_one_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse([], {"TEST_BOX_SIZE": "4", "TEST_SIZE": "04"}).size == 4  # compared as the flag reads them
    with pytest.raises(SystemExit):
        parse([], {"TEST_BOX_SIZE": "4", "TEST_SIZE": "5"})
    assert "TEST_BOX_SIZE and TEST_SIZE give --box-size different values; set one" in capsys.readouterr().err


def test_a_bad_old_variable_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse([], {"TEST_SIZE": "0"})
    assert "environment variable TEST_SIZE: '0': must be at least 1" in capsys.readouterr().err


def test_help_names_the_new_spelling_first_and_the_variable_that_set_the_default() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser, FLAGS, prefix=PREFIX, parser=parser, environ={"TEST_SIZE": "6"})
    text = parser.format_help()
    assert "--box-size SIZE, --size SIZE" in text
    assert "(default: 6, from TEST_SIZE) [env TEST_BOX_SIZE]" in " ".join(text.split())
