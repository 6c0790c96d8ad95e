"""The hand-written inputs are what admission would store: already defaulted and valid."""

from __future__ import annotations

import pytest

from shared.defaults import apply_defaults
from shared.validation import validate_modelbooster
from tests.unit.synthesis.support import load_input

INPUTS = ["single-vllm", "pd-nixl", "two-backends-model-autoscaling", "backend-autoscaling"]


@pytest.mark.parametrize("name", INPUTS)
def test_input_is_defaulted_and_valid(name: str) -> None:
    doc = load_input(name)
    defaulted = apply_defaults(doc)
    assert defaulted.obj == doc
    assert defaulted.warnings == []
    assert validate_modelbooster(doc) == []
