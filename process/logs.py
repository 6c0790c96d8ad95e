"""Logging for both processes: plain text, or one JSON object per line.

Not API, but process plumbing the webhook and the reconciler share (they may not import each other).

Context travels as one dict in `extra={"context": {...}}` (`uid`, `namespace`, `name`, `operation`, ...):
a single key cannot collide with LogRecord's own attributes (`name` is one), and both formats flatten it
so log pipelines can filter on each field. Object payloads are never logged at info or above.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD: Final = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    extras = {key: value for key, value in record.__dict__.items() if key not in _STANDARD and not key.startswith("_")}
    context = extras.pop("context", None)
    if isinstance(context, dict):
        extras.update(context)
    return extras


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(_extras(record))
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = _extras(record)
        if not extras:
            return line
        context = " ".join(f"{key}={value}" for key, value in extras.items())
        head, newline, rest = line.partition("\n")  # keep a traceback below the context
        return f"{head} {context}{newline}{rest}"


def configure(*, level: str, fmt: str, stream: TextIO | None = None) -> None:
    """Replace the root handlers with one that writes to stdout in the chosen format."""
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # aiohttp's access log would print every admission request and every scrape at info; the processes'
    # own logs say more.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
