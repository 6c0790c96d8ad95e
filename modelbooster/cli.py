"""The one console script, `modelbooster`, dispatching to each process's entry point.

Each subcommand's module is imported only when that subcommand runs, so that `modelbooster render` never imports
aiohttp servers or the reconciler, the webhook never imports the reconciler, the Kubernetes API client or
SciPy (about 20 MB of resident memory), and `modelbooster --help` imports none of them. The imports are ordinary
ones inside small functions, so readers and import-linter see every dependency of the CLI.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

PROG = "modelbooster"

DESCRIPTION = """\
Check and render Kthena ModelBooster manifests without a cluster, and run the processes that serve them in
one: the admission webhook, the reconciler (with the Inferno controller) and the Inferno optimizer."""

EPILOG = """\
examples:
  modelbooster validate -f model.yaml             check a manifest as the admission webhook would
  modelbooster validate -f manifests/ -R          every *.yaml, *.yml, *.json below a directory
  kustomize build . | modelbooster render -f -    the objects the reconciler would create
  source <(modelbooster completion bash)          tab completion (bash; zsh: completion zsh)

exit codes: 0 success; 1 an object is rejected, or the process failed; 2 unusable input or arguments;
3 (validate) admitted, but the reconciler will not act on an object (it stays Failed).
Run `modelbooster COMMAND --help` for a command's options and exit codes."""

# What the process commands' exit codes mean (render and validate define their own, in EXIT_CODES).
SERVER_EXIT_CODES: Mapping[int, str] = {
    0: "stopped by SIGTERM or SIGINT after finishing in-flight work",
    1: "failed while running (a listener cannot bind, the API server cannot be reached, ...)",
    2: "unusable flags or environment variables (one line on stderr)",
}


class _VersionAction(argparse.Action):
    """`--version`, reading the installed package's metadata only when asked: importing `importlib.metadata`
    costs a fifth of a second of CPU on some machines, and `completion` runs from every new shell."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, help=str(kwargs["help"]))

    def __call__(self, parser: argparse.ArgumentParser, *_: object, **__: object) -> None:
        from process.build import version

        sys.stdout.write(f"{PROG} {version()}\n")
        parser.exit()


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (they hold examples); room for the longest command name."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32)


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


def _completion() -> _Command:
    from modelbooster import completion

    return completion.Command()


def _rollout() -> _Command:
    from modelbooster import rollout

    return rollout


def _webhook() -> _Command:
    from webhook import main

    return main


def _reconciler() -> _Command:
    from reconciler import main

    return main


def _optimizer() -> _Command:
    from optimizer.rest import cli

    return cli


@dataclass(frozen=True)
class Subcommand:
    load: Callable[[], _Command]
    help: str
    # Shown under the command's --help unless its module defines EXIT_CODES.
    exit_codes: Mapping[int, str] = field(default_factory=dict)


_TOOL_EXIT_CODES: Mapping[int, str] = {0: "done", 1: "failed (the reason on stderr)", 2: "unusable arguments"}

COMMANDS: dict[str, Subcommand] = {
    "render": Subcommand(_render, "print the objects the reconciler would create for ModelBoosters (offline)"),
    "validate": Subcommand(_validate, "check ModelBooster and Inferno manifests as admission would (offline)"),
    "crds": Subcommand(_crds, "print the CRD manifests generated from the shared models", _TOOL_EXIT_CODES),
    "certs": Subcommand(_certs, "write a CA and serving certificate for local development", _TOOL_EXIT_CODES),
    "rollout": Subcommand(_rollout, "ask for the current rendering of ModelBoosters' ModelServings (restarts pods)"),
    "completion": Subcommand(_completion, "print a shell completion script (bash or zsh)", _TOOL_EXIT_CODES),
    "webhook": Subcommand(_webhook, "run the admission webhook server", SERVER_EXIT_CODES),
    "reconciler": Subcommand(_reconciler, "run the controller (ModelBooster, Inferno)", SERVER_EXIT_CODES),
    "optimizer": Subcommand(_optimizer, "run the Inferno optimizer REST server", SERVER_EXIT_CODES),
}


def _load(name: str) -> _Command:
    return COMMANDS[name].load()


def exit_codes_text(codes: Mapping[int, str]) -> str:
    return "exit codes:\n" + "\n".join(f"  {code}  {meaning}" for code, meaning in sorted(codes.items()))


def build_parser(loader: Callable[[str], _Command] = _load, *, only: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with `only`, import just that command's module (the others stay listed in --help;
    `only=""` imports none, for the top-level help)."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG, formatter_class=_HelpFormatter)
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for name, command_info in COMMANDS.items():
        command_parser = sub.add_parser(
            name,
            help=command_info.help,
            description=command_info.help,
            formatter_class=_HelpFormatter,
        )
        if only is not None and name != only:
            continue
        try:
            command = loader(name)
        except ImportError as error:
            # A command whose module is not installed (an optional part) still shows in --help.
            command_parser.set_defaults(_missing=error.name or str(error))
            continue
        command.add_arguments(command_parser)
        codes = getattr(command, "EXIT_CODES", None) or command_info.exit_codes
        if codes:
            command_parser.epilog = exit_codes_text(codes)
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
