"""Logging for the reconciler process: the shared formats (shared/logs.py).

Context travels in `extra=` (e.g. `reconcileID`), so both formats carry it and log pipelines can filter on it.
"""

from __future__ import annotations

from shared.logs import JsonFormatter, TextFormatter, configure

__all__ = ["JsonFormatter", "TextFormatter", "configure"]
