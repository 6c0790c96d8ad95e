"""The one console script, `modelbooster`, dispatching to each process's entry point.

Subcommands are resolved lazily so that `modelbooster render` never imports aiohttp servers or the
Kubernetes client, and so that each package owns its own command-line surface.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Protocol


class _Command(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# name -> (module implementing add_arguments/run, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "render": ("reconciler.render_cli", "default, validate and synthesize a ModelBooster offline; print children"),
    "validate": ("shared.validate_cli", "run the admission checks offline; print the defaulted object or the denial"),
    "crds": ("shared.crds_cli", "print the CRD manifests generated from the shared models"),
    "webhook": ("webhook.main", "run the admission webhook server"),
    "reconciler": ("reconciler.main", "run the controller"),
    "certs": ("certs.cli", "write a CA and serving certificate for local development"),
    "optimizer": ("reconciler.inferno.rest", "run the Inferno optimizer REST server"),
}


def _load(module: str) -> _Command:
    loaded: _Command = importlib.import_module(module)
    return loaded


def build_parser(
    loader: Callable[[str], _Command] = _load, *, only: str | None = None
) -> argparse.ArgumentParser:
    """The full parser; with `only`, import just that command's module (the others stay listed in --help).

    Loading one module keeps each process lean: the webhook never imports the Kubernetes client, the
    reconciler or SciPy (about 20 MB of resident memory).
    """
    parser = argparse.ArgumentParser(prog="modelbooster", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if only is not None and name != only:
            continue
        try:
            command = loader(module)
        except ImportError:
            # A command whose module is not installed (an optional part) still shows in --help.
            command_parser.set_defaults(_missing=module)
            continue
        command.add_arguments(command_parser)
        command_parser.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in arguments if not a.startswith("-")), None)
    parser = build_parser(only=chosen if chosen in COMMANDS else None)
    args = parser.parse_args(arguments)
    missing = getattr(args, "_missing", None)
    if missing is not None:
        print(f"modelbooster {args.command}: not available in this installation ({missing})", file=sys.stderr)
        return 2
    run: Callable[[argparse.Namespace], int] = args._run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
