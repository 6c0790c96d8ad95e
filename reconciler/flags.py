"""Command-line flags of the reconciler process, each with an environment variable as its default.

`--workers` can also be given as `MODELBOOSTER_RECONCILER_WORKERS`: the flag wins over the variable, which
wins over the built-in default. A bad variable is a usage error that names the variable, like a bad flag.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

ENV_PREFIX: Final = "MODELBOOSTER_RECONCILER_"


class _ArgumentTarget(Protocol):
    def add_argument(self, *names: str, **options: Any) -> Any: ...


@dataclass(frozen=True)
class Flag:
    dest: str
    parse: Callable[[str], Any]
    default: Any
    help: str


def env_name(flag: str) -> str:
    """`--lease-name` -> `MODELBOOSTER_RECONCILER_LEASE_NAME`."""
    return ENV_PREFIX + flag.removeprefix("--").replace("-", "_").upper()


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _typed(flag: str, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None

    convert.__name__ = flag.removeprefix("--")  # argparse names the flag's type in its messages
    return convert


def add_flags(
    target: _ArgumentTarget,
    flags: Mapping[str, Flag],
    *,
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str],
) -> None:
    """Add each flag to `target` (a parser or an argument group) with its variable as the default."""
    for flag, spec in flags.items():
        convert = _typed(flag, spec.parse)
        default = spec.default
        variable = env_name(flag)
        if variable in environ:
            try:
                default = convert(environ[variable])
            except argparse.ArgumentTypeError as error:
                parser.error(f"environment variable {variable}: {error}")
        target.add_argument(flag, dest=spec.dest, type=convert, default=default, help=f"{spec.help} [env {variable}]")


def add_switch(
    target: _ArgumentTarget,
    flag: str,
    *,
    dest: str,
    default: bool,
    help: str,
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str],
) -> None:
    """A `--x/--no-x` switch whose default comes from its variable when set."""
    variable = env_name(flag)
    if variable in environ:
        try:
            default = parse_bool(environ[variable])
        except ValueError as error:
            parser.error(f"environment variable {variable}: {error}")
    target.add_argument(
        flag, dest=dest, action=argparse.BooleanOptionalAction, default=default, help=f"{help} [env {variable}]"
    )
