"""The flag tables of tests/unit/engines/*_flags.txt: each engine release's long options, read from its source."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent


@dataclass(frozen=True)
class FlagTable:
    options: frozenset[str]  # every long option, `--no-` forms included
    negatable: frozenset[str]  # the options that also have a `--no-` form


@cache
def flag_table(engine: str, version: str) -> FlagTable:
    path = HERE / f"{engine}_{version.replace('.', '_')}_flags.txt"
    options: set[str] = set()
    negatable: set[str] = set()
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        names = line.split()
        options.update(names)
        if len(names) == 2:
            negatable.add(names[0])
    return FlagTable(options=frozenset(options), negatable=frozenset(negatable))
