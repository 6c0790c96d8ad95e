"""A worker's `config` object as vLLM command-line arguments (docs/design/synthesis.md §9, Q18).

Keys are sorted by their bytes and become `--key` with `_` turned into `-`. Values become text the way a
person would type them, not the way Go's `%v` printed them: integers stay integers (`1000000`, never
`1e+06`), floats take their shortest round-trip form, objects become JSON (vLLM parses dict-valued options
as JSON), and an array gives one argument per element (vLLM's list options take `nargs="+"`).
An empty string, `null` (YAML's `key:` with nothing after it) and an empty array give a bare flag.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

# Integral floats below this print as integers (`2.0` -> `2`), so an int option written as a float still
# parses; beyond it the exponent form is shorter and no vLLM integer option gets that large anyway.
_INTEGRAL_FLOAT_LIMIT = 1e21


def flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def number_text(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value.is_integer() and abs(value) < _INTEGRAL_FLOAT_LIMIT:
        return str(int(value))
    return repr(value)


def scalar_text(value: object) -> str:
    """One JSON value as a single argument."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return number_text(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def value_texts(value: object) -> list[str]:
    """The arguments that follow a flag; empty for a bare flag."""
    if isinstance(value, list):
        return [text for text in (scalar_text(item) for item in value) if text]
    text = scalar_text(value)
    return [text] if text else []


def engine_args(config: Mapping[str, Any] | None) -> list[str]:
    """`--flag value` arguments for a worker config object (None: no arguments)."""
    args: list[str] = []
    if not config:
        return args
    # Python orders str by code point, which is the byte order of their UTF-8 form, as in the reference.
    for key in sorted(config):
        args.append(flag(key))
        args.extend(value_texts(config[key]))
    return args
