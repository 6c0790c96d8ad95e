"""The CRD check as a peer of the process's controllers (reconciler/peer.py): the kind it reads (kinds.py),
its flags (settings.py), the check and its registration (controller.py) and its gauge (metrics.py)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Final

from reconciler.crdcheck.controller import register
from reconciler.crdcheck.settings import CrdCheckSettings, add_crd_check_arguments, crd_check_settings_from_args
from reconciler.peer import Peer


def _add_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    add_crd_check_arguments(parser, environ=environ)


def _settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> CrdCheckSettings:
    # `check_inferno` stays at its default: the process sets it from the Inferno controller's settings.
    return crd_check_settings_from_args(args)


PEER: Final = Peer(
    name="crdcheck", add_arguments=_add_arguments, settings_from_args=_settings_from_args, register=register
)
