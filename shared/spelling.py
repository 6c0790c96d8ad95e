"""Which known name a misspelt one most likely means: the "did you mean" of every unknown or missing field.

A name is taken for another when the two are one edit apart — a letter added, dropped, changed, or two
neighbours swapped (`minReplica`, `replcias`, `tpye`), letter case aside (`modelUri` for `modelURI`) — or, failing
that, when they are close by `difflib`'s ratio (`scaleToZeroGrace` for `scaleToZeroGracePeriod`). One edit is
checked first: short names (`typ`, `env`) are one edit from their meaning but not close by ratio.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Final

# difflib's ratio above which a longer name is taken for another (two thirds of its letters in order, about).
_CLOSE_RATIO: Final = 0.75


def one_edit_apart(a: str, b: str) -> bool:
    """Whether `a` becomes `b` by one insertion, deletion, substitution or swap of neighbours, letter case aside
    (a name that differs only in case counts too). Equal names are not one edit apart."""
    if a == b:
        return False
    x, y = a.casefold(), b.casefold()
    if x == y:
        return True
    if abs(len(x) - len(y)) > 1:
        return False
    if len(x) > len(y):
        x, y = y, x
    start = 0
    while start < len(x) and x[start] == y[start]:
        start += 1
    if len(x) < len(y):  # one letter inserted at `start`
        return x[start:] == y[start + 1 :]
    if x[start + 1 :] == y[start + 1 :]:  # one letter changed
        return True
    # Two neighbours swapped.
    return x[start : start + 2] == y[start : start + 2][::-1] and x[start + 2 :] == y[start + 2 :]


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` most likely means, or None (`name` itself is never offered)."""
    candidates = [option for option in known if option != name]
    for option in candidates:
        if one_edit_apart(name, option):
            return option
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=_CLOSE_RATIO)
    return close[0] if close else None


def did_you_mean(name: str) -> str:
    return f'did you mean "{name}"?'
