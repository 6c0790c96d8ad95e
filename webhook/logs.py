"""Logging for the webhook process: the shared formats (shared/logs.py).

Context travels as one dict in `extra={"context": {...}}` (`uid`, `namespace`, `name`, `operation`, ...).
Object payloads are never logged at info or above.
"""

from __future__ import annotations

from shared.logs import JsonFormatter, TextFormatter, configure

__all__ = ["JsonFormatter", "TextFormatter", "configure"]
