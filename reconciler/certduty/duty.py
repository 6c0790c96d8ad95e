"""Moved to reconciler/certduty/controller.py (issue 28). Kept only for reconciler/main.py, which imports it
until it registers `reconciler.certduty.PEER`; delete this module then."""

from __future__ import annotations

from reconciler.certduty.controller import register_cert_duty

__all__ = ["register_cert_duty"]
