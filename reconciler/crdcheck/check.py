"""Split into reconciler/crdcheck/settings.py and controller.py (issue 28). Kept only for reconciler/main.py,
which imports it until it registers `reconciler.crdcheck.PEER`; delete this module then."""

from __future__ import annotations

from reconciler.crdcheck.controller import register_crd_check
from reconciler.crdcheck.settings import CrdCheckSettings, add_crd_check_arguments, crd_check_settings_from_args

__all__ = ["CrdCheckSettings", "add_crd_check_arguments", "crd_check_settings_from_args", "register_crd_check"]
