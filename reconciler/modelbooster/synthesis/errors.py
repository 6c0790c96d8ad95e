"""The one error synthesis raises: the ModelBooster cannot be turned into children as written."""

from __future__ import annotations


class SynthesisError(ValueError):
    """A ModelBooster that validation would reject (or a bug in the rules): the message says what is wrong.

    Texts follow the reference controller (docs/design/synthesis.md §1), so a user sees the
    same words whether admission or the reconciler caught the problem.
    """
