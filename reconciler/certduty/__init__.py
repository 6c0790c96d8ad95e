"""The webhook-certificate duty as a peer of the process's controllers (reconciler/peer.py): its kinds
(kinds.py), flags (settings.py), the duty and its registration (controller.py) and its series (metrics.py)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Final

from reconciler.certduty.controller import register
from reconciler.certduty.settings import CertDutySettings, add_cert_arguments, cert_settings_from_args
from reconciler.peer import Peer


def _add_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    add_cert_arguments(parser, environ=environ)


def _settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> CertDutySettings:
    return cert_settings_from_args(args, environ=environ)


PEER: Final = Peer(
    name="certduty", add_arguments=_add_arguments, settings_from_args=_settings_from_args, register=register
)
