"""Flags of the CRD check (`modelbooster reconciler --check-child-crds ...`) and their variables.

Like every reconciler flag, each has an environment variable `MODELBOOSTER_RECONCILER_<FLAG>` as its default
(the flag wins over the variable, which wins over the built-in default).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass

from process.flags import add_switch
from reconciler.settings import ENV_PREFIX


@dataclass(frozen=True)
class CrdCheckSettings:
    check_children: bool = True


def add_crd_check_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    add_switch(
        parser,
        "--check-child-crds",
        dest="check_child_crds",
        default=True,
        help="judge the five child CRDs too (off when Kthena, not this chart, installs them)",
        prefix=ENV_PREFIX,
        parser=parser,
        environ=environ,
    )


def crd_check_settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> CrdCheckSettings:
    del environ  # its one flag (or its variable) is read by the parser
    return CrdCheckSettings(check_children=bool(args.check_child_crds))
