"""Command-line flags with an environment variable as each one's default, for every process.

Precedence: flag > environment variable > built-in default. A process names its variables with one prefix:
`--lease-name` of the reconciler is `MODELBOOSTER_RECONCILER_LEASE_NAME`, `--port` of the webhook is
`MODELBOOSTER_WEBHOOK_PORT` (upper case, dashes as underscores). A bad variable is a usage error that names the
variable, like a bad flag, so a typo in a Deployment's env fails at start-up instead of being ignored.

A flag renamed (`prefixed`: a controller's flags carry its name) keeps its old spelling as an alias, for the flag
and for its variable. The spellings are one flag: on the command line the last one given wins, as for one
spelling given twice (a chart's extra arguments come last and override its own); two variables set to
different values have no order and are refused.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

_T = TypeVar("_T")


class _ArgumentTarget(Protocol):
    def add_argument(self, *names: str, **options: Any) -> Any: ...


@dataclass(frozen=True)
class Flag:
    dest: str
    parse: Callable[[str], Any]
    default: Any
    help: str
    # Old spellings still accepted, each with its own variable (`prefixed` fills this in).
    aliases: tuple[str, ...] = ()


def prefixed(name: str, flags: Mapping[str, Flag]) -> dict[str, Flag]:
    """`flags` with each one's name under `--<name>-`, the old spelling kept as an alias: a controller's flags
    say whose they are (`--workers` of `modelbooster` -> `--modelbooster-workers`, still accepting `--workers`).
    A flag already so named stays as it is."""
    head = f"--{name}-"
    renamed = {}
    for flag, spec in flags.items():
        if flag.startswith(head):
            renamed[flag] = spec
        else:
            renamed[head + flag.removeprefix("--")] = replace(spec, aliases=(*spec.aliases, flag))
    return renamed


def env_name(flag: str, *, prefix: str) -> str:
    """`--lease-name` with prefix `MODELBOOSTER_RECONCILER_` -> `MODELBOOSTER_RECONCILER_LEASE_NAME`."""
    return prefix + flag.removeprefix("--").replace("-", "_").upper()


# --- value parsers: each raises ValueError with a message that says what was wrong ---------------------------


def parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("not an integer") from None


def parse_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("not a number") from None
    if not math.isfinite(value):  # NaN passes every comparison below, and no setting here means infinity
        raise ValueError("not a finite number")
    return value


def positive_int(text: str) -> int:
    value = parse_int(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def non_negative_float(text: str) -> float:
    value = parse_float(text)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def positive_float(text: str) -> float:
    value = parse_float(text)
    if value <= 0:
        raise ValueError("must be positive")
    return value


def port(text: str) -> int:
    value = parse_int(text)
    if not 0 <= value <= 65535:
        raise ValueError("must be 0..65535")
    return value


@dataclass(frozen=True)
class Choice:
    """One of `allowed`, in either case (`DEBUG` is `debug`); a class, so that --help and the shell completion
    can list the values (as `{debug,info,...}`)."""

    allowed: tuple[str, ...]

    def __call__(self, text: str) -> str:
        if text.lower() not in self.allowed:
            raise ValueError(f"must be one of {', '.join(self.allowed)}")
        return text.lower()

    @property
    def metavar(self) -> str:
        return "{" + ",".join(self.allowed) + "}"


def choice(*allowed: str) -> Choice:
    return Choice(allowed)


def comma_list(text: str) -> tuple[str, ...]:
    """`a, b,,c` -> ("a", "b", "c"): blanks between commas are dropped."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def typed(flag: str, parse: Callable[[str], _T]) -> Callable[[str], _T]:
    """An argparse type whose error message says what was wrong, not just 'invalid value'."""

    def convert(text: str) -> _T:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None

    convert.__name__ = flag.removeprefix("--")  # argparse names the flag's type in its messages
    return convert


# --- adding flags to a parser ---------------------------------------------------------------------------------


def env_default(
    flag: str,
    convert: Callable[[str], _T],
    default: _T,
    *,
    prefix: str,
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str],
    aliases: Sequence[str] = (),
) -> _T:
    """The flag's default: its environment variable when set (checked like the flag), else `default`.

    A variable set to an empty string counts as unset: Deployments often carry `value: ""` for "not set". The
    variables of the flag's old spellings (`aliases`) count too; two set to different values are refused.
    """
    found = _from_environment(flag, convert, prefix=prefix, parser=parser, environ=environ, aliases=aliases)
    return default if found is None else found[1]


def _from_environment(
    flag: str,
    convert: Callable[[str], _T],
    *,
    prefix: str,
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str],
    aliases: Sequence[str] = (),
) -> tuple[str, _T] | None:
    """The variable that sets the flag and its value, None when none does."""
    found: tuple[str, _T] | None = None
    for variable in (env_name(name, prefix=prefix) for name in (flag, *aliases)):
        if not environ.get(variable, "").strip():
            continue
        try:
            value = convert(environ[variable])
        except (argparse.ArgumentTypeError, ValueError) as error:
            parser.error(f"environment variable {variable}: {error}")
        if found is not None and found[1] != value:
            parser.error(f"environment variables {found[0]} and {variable} give {flag} different values; set one")
        found = found or (variable, value)
    return found


def default_text(value: object) -> str | None:
    """A default as `--help` and the docs' flag tables show it: `5`, `on`, `a,b`; None for "not set" (the help
    text says what an unset flag means, e.g. "default: all namespaces")."""
    if value is None or value in ((), [], ""):
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple | list):
        return ",".join(str(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _with_default(
    help_text: str, *, default: object, built_in: object, variable: str, set_by: str | None = None
) -> str:
    """The help text with the flag's default (and where it comes from when a variable, `set_by`, set it), then
    the flag's variable, escaped for argparse's %-formatting."""
    shown = default_text(default)
    if shown is not None:
        source = f", from {set_by or variable}" if default != built_in else ""
        help_text = f"{help_text} (default: {shown}{source})"
    return f"{help_text} [env {variable}]".replace("%", "%%")


def add_flags(
    target: _ArgumentTarget,
    flags: Mapping[str, Flag],
    *,
    prefix: str,
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str],
) -> None:
    """Add each flag to `target` (a parser or an argument group) with its variable as the default."""
    for flag, spec in flags.items():
        convert = typed(flag, spec.parse)
        found = _from_environment(flag, convert, prefix=prefix, parser=parser, environ=environ, aliases=spec.aliases)
        set_by, default = (None, spec.default) if found is None else found
        variable = env_name(flag, prefix=prefix)
        metavar = spec.parse.metavar if isinstance(spec.parse, Choice) else None
        shown = _with_default(spec.help, default=default, built_in=spec.default, variable=variable, set_by=set_by)
        target.add_argument(
            flag,
            *spec.aliases,
            dest=spec.dest,
            type=convert,
            default=default,
            metavar=metavar,
            help=shown,
        )


def add_switch(
    target: _ArgumentTarget,
    flag: str,
    *,
    dest: str,
    default: bool,
    help: str,
    prefix: str,
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str],
    parse: Callable[[str], bool] = parse_bool,
) -> None:
    """A `--x/--no-x` switch whose default comes from its variable when set."""
    value = env_default(flag, parse, default, prefix=prefix, parser=parser, environ=environ)
    target.add_argument(
        flag,
        dest=dest,
        action=argparse.BooleanOptionalAction,
        default=value,
        help=_with_default(help, default=value, built_in=default, variable=env_name(flag, prefix=prefix)),
    )
