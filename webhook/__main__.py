"""`python -m webhook`: the webhook server alone, without loading the other `modelbooster` subcommands."""

from __future__ import annotations

import argparse
import sys

from webhook.main import add_arguments, run


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook", description="run the admission webhook server")
    add_arguments(parser)
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
