"""The one console script, `modelbooster`, dispatching to each process's entry point.

Each subcommand's module is imported only when that subcommand runs, so that `modelbooster render` never imports
aiohttp servers or the reconciler, and the webhook never imports the reconciler, the Kubernetes API client or
SciPy (about 20 MB of resident memory). The imports are ordinary ones inside small functions, so readers and
import-linter see every dependency of the CLI.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from process.build import version


class _Command(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _render() -> _Command:
    from modelbooster import render

    return render


def _validate() -> _Command:
    from modelbooster import validate

    return validate


def _crds() -> _Command:
    from modelbooster import crds

    return crds


def _certs() -> _Command:
    from modelbooster import certs

    return certs


def _webhook() -> _Command:
    from webhook import main

    return main


def _reconciler() -> _Command:
    from reconciler import main

    return main


def _optimizer() -> _Command:
    from optimizer import rest

    return rest


@dataclass(frozen=True)
class Subcommand:
    load: Callable[[], _Command]
    help: str


COMMANDS: dict[str, Subcommand] = {
    "render": Subcommand(_render, "default, validate and synthesize a ModelBooster offline; print children"),
    "validate": Subcommand(_validate, "run the admission checks offline; print the defaulted object or the denial"),
    "crds": Subcommand(_crds, "print the CRD manifests generated from the shared models"),
    "webhook": Subcommand(_webhook, "run the admission webhook server"),
    "reconciler": Subcommand(_reconciler, "run the controller"),
    "certs": Subcommand(_certs, "write a CA and serving certificate for local development"),
    "optimizer": Subcommand(_optimizer, "run the Inferno optimizer REST server"),
}


def _load(name: str) -> _Command:
    return COMMANDS[name].load()


def build_parser(
    loader: Callable[[str], _Command] = _load, *, only: str | None = None
) -> argparse.ArgumentParser:
    """The full parser; with `only`, import just that command's module (the others stay listed in --help)."""
    parser = argparse.ArgumentParser(prog="modelbooster", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"modelbooster {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command_info in COMMANDS.items():
        command_parser = sub.add_parser(name, help=command_info.help, description=command_info.help)
        if only is not None and name != only:
            continue
        try:
            command = loader(name)
        except ImportError as error:
            # A command whose module is not installed (an optional part) still shows in --help.
            command_parser.set_defaults(_missing=error.name or str(error))
            continue
        command.add_arguments(command_parser)
        command_parser.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in arguments if not a.startswith("-")), None)
    # With no command (`--version`, `--help`, a mistake) no command's module is needed.
    parser = build_parser(only=chosen if chosen in COMMANDS else "")
    args = parser.parse_args(arguments)
    missing = getattr(args, "_missing", None)
    if missing is not None:
        print(f"modelbooster {args.command}: not available in this installation ({missing})", file=sys.stderr)
        return 2
    run: Callable[[argparse.Namespace], int] = args._run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
