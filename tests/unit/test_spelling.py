"""Which known name a misspelt one means (shared/spelling.py): one edit apart, letter case aside, else close."""

from __future__ import annotations

import pytest

from shared.spelling import closest, one_edit_apart


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("minReplica", "minReplicas"),  # a letter dropped
        ("replicass", "replicas"),  # added
        ("replicaz", "replicas"),  # changed
        ("repilcas", "replicas"),  # two neighbours swapped
        ("tpye", "type"),
        ("typ", "type"),  # short: not close by ratio, but one edit
        ("modelUri", "modelURI"),  # letter case alone
        ("ModelUri", "modelURI"),
    ],
)
def test_one_edit_apart(typed: str, meant: str) -> None:
    assert one_edit_apart(typed, meant)
    assert closest(typed, ["name", meant, "workers"]) == meant


@pytest.mark.parametrize(("a", "b"), [("type", "type"), ("tpyee", "type"), ("abcd", "badc"), ("env", "envFromX")])
def test_not_one_edit_apart(a: str, b: str) -> None:
    assert not one_edit_apart(a, b)


def test_a_longer_name_may_be_further_off_and_still_meant() -> None:
    assert closest("scaleToZeroGrace", ["scalingCost", "scaleToZeroGracePeriod"]) == "scaleToZeroGracePeriod"
    assert closest("image", ["name", "type", "workers"]) is None
    assert closest("name", ["name"]) is None  # a name is not its own typo
