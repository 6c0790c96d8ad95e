"""Field paths as the field errors print them (`spec.backends[0].workers[1].config[port]`), taken apart.

A path is dotted names with bracketed steps: `[<digits>]` is a list index, anything else in brackets is a
map key (how apimachinery prints a key of a free-form map). Parsing gives the steps as `str` (a name or
a key) and `int` (an index), which is what walking a JSON object needs.
"""

from __future__ import annotations

import re
from typing import Final

Step = str | int

_TOKEN: Final = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


class BadFieldPath(ValueError):
    """Not a field path of the form the field errors use."""


def parse(path: str) -> tuple[Step, ...]:
    """`spec.backends[0].name` -> ("spec", "backends", 0, "name")."""
    steps: list[Step] = []
    position = 0
    while position < len(path):
        match = _TOKEN.match(path, position)
        if match is None or match.end() == position:
            raise BadFieldPath(f"cannot parse field path {path!r} at offset {position}")
        name, bracketed = match.groups()
        if name is not None:
            steps.append(name)
        elif bracketed.isdigit():
            steps.append(int(bracketed))
        else:
            steps.append(bracketed)
        position = match.end()
    return tuple(steps)


def json_pointer(path: str) -> str:
    """The RFC 6901 pointer of a field path, for a JSON Patch: `spec.backends[0].x` -> `/spec/backends/0/x`."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in parse(path))
