"""pydantic's words for its own checks, as the installed release says them.

Where our messages pass on a message pydantic wrote for one of its checks (a bound, a type, a required field),
tests pin the check we own (its field, its kind, its limit), not pydantic's wording, which a release may change.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticKnownError


def says(error_type: Any, **context: Any) -> str:
    """What pydantic says for `error_type` (e.g. "greater_than", gt=0)."""
    return PydanticKnownError(error_type, context or None).message()
