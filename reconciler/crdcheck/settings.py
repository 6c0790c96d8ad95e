"""Flags of the CRD check (`modelbooster reconciler --check-child-crds ...`) and their variables.

Like every reconciler flag, each has an environment variable `MODELBOOSTER_RECONCILER_<FLAG>` as its default
(the flag wins over the variable, which wins over the built-in default).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass

from process.flags import add_switch
from reconciler.settings import ENV_PREFIX


@dataclass(frozen=True)
class CrdCheckSettings:
    check_children: bool = True
    # Inferno's CRDs matter only while the Inferno controller runs (the process sets this from its settings).
    check_inferno: bool = True


def add_crd_check_arguments(parser: argparse.ArgumentParser, *, environ: Mapping[str, str] | None = None) -> None:
    add_switch(
        parser,
        "--check-child-crds",
        dest="check_child_crds",
        default=True,
        help="judge the five child CRDs too (off when Kthena, not this chart, installs them)",
        prefix=ENV_PREFIX,
        parser=parser,
        environ=os.environ if environ is None else environ,
    )


def crd_check_settings_from_args(args: argparse.Namespace) -> CrdCheckSettings:
    return CrdCheckSettings(check_children=bool(args.check_child_crds))
