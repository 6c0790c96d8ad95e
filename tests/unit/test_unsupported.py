"""The unsupported-feature tables: the grouped presence test agrees with each field's own."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.unsupported import (
    AUTOSCALING_UNSUPPORTED,
    BACKEND_UNSUPPORTED,
    SPEC_UNSUPPORTED,
    WORKER_UNSUPPORTED,
    UnsupportedFields,
)

_GROUPS = (SPEC_UNSUPPORTED, BACKEND_UNSUPPORTED, WORKER_UNSUPPORTED, AUTOSCALING_UNSUPPORTED)
# Every segment of every unsupported field, and keys near them, so that generated holders often set one.
_KEYS = sorted({segment for group in _GROUPS for field in group for segment in field.segments} | {"name", "scaleDown"})
_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=3)


def _json(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=2) | st.dictionaries(st.sampled_from(_KEYS), children, max_size=4)


_VALUES = st.recursive(_SCALARS, _json, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(group=st.sampled_from(_GROUPS), holder=_VALUES)
def test_a_group_finds_exactly_the_fields_that_are_set(group: UnsupportedFields, holder: object) -> None:
    assert group.present_in(holder) == tuple(field for field in group if field.present_in(holder))


def test_a_null_field_is_absent_and_a_nested_one_is_found_under_its_parent() -> None:
    assert AUTOSCALING_UNSUPPORTED.present_in({"behavior": None}) == ()
    nested: dict[str, Any] = {"behavior": {"scaleUp": {"panicPolicy": {}}}}
    assert [field.path for field in AUTOSCALING_UNSUPPORTED.present_in(nested)] == [
        "behavior.scaleUp.panicPolicy",
        "behavior",
    ]
    assert BACKEND_UNSUPPORTED.present_in(["topology"]) == ()
